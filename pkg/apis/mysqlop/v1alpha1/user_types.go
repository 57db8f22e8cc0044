package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=myu,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Account",type=string,JSONPath=`.status.account`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.spec.user) || (size(self.metadata.name) <= 32 && !(self.metadata.name in ['root', 'mysqlop', 'repl', 'mariadb.sys', 'mysql.sys', 'mysql.session', 'mysql.infoschema']))",message="metadata.name is the account's user name when spec.user is unset: at most 32 characters and not a name the operator uses itself; set spec.user"

// MySQLUser is a database account in a MySQLCluster: its password comes from a Secret key
// and follows changes of that Secret, and its grants converge on the listed ones.
type MySQLUser struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired account.
	Spec MySQLUserSpec `json:"spec"`
	// Status is what the operator last did.
	// +optional
	Status MySQLUserStatus `json:"status,omitempty"`
}

// MySQLUserSpec is a desired database account. The password is never part of it: it is read
// from passwordSecretRef.
// +kubebuilder:validation:XValidation:rule="has(self.user) == has(oldSelf.user) && (!has(self.user) || self.user == oldSelf.user)",message="user is immutable"
// +kubebuilder:validation:XValidation:rule="self.host == oldSelf.host",message="host is immutable"
type MySQLUserSpec struct {
	// ClusterRef is the cluster, in the same namespace, the account lives in.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef ClusterReference `json:"clusterRef"`
	// User is the account's user name; default the object's name. Names the operator uses
	// itself are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['root', 'mysqlop', 'repl', 'mariadb.sys', 'mysql.sys', 'mysql.session', 'mysql.infoschema', 'PUBLIC'])",message="user name is reserved"
	// +optional
	User string `json:"user,omitempty"`
	// Host is the host pattern the account may connect from.
	// +kubebuilder:default="%"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.%:/-]+$`
	// +optional
	Host string `json:"host,omitempty"`
	// PasswordSecretRef is the Secret key holding the password. Changing the Secret changes
	// the password.
	PasswordSecretRef SecretKeyRef `json:"passwordSecretRef"`
	// Grants are the account's privileges; privileges not listed are revoked. On *.* only
	// BINLOG MONITOR, PROCESS, REPLICA MONITOR, REPLICATION CLIENT, SHOW DATABASES, SLAVE
	// MONITOR and USAGE are granted (the others write past read_only, which fencing during a
	// failover relies on, reach files or the accounts, or manage the server). No grant may
	// name a database pattern that matches mysql or information_schema; one that matches
	// performance_schema or sys may hold only SELECT.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Grants []Grant `json:"grants,omitempty"`
	// MaxUserConnections limits the account's simultaneous connections; 0 is unlimited.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	MaxUserConnections int64 `json:"maxUserConnections,omitempty"`
	// RequireTLS makes the server refuse the account's unencrypted connections.
	// +optional
	RequireTLS bool `json:"requireTLS,omitempty"`
	// RequireSubject makes the server accept only connections over TLS with a client
	// certificate that the cluster's CA verifies and whose subject is exactly this, written
	// as the server prints it (e.g. /CN=app/O=example). It implies requireTLS.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	RequireSubject string `json:"requireSubject,omitempty"`
	// AdoptExisting lets the MySQLUser take over an account that exists on the server and
	// that it did not create: its password is set from the Secret and its grants and limits
	// are made the spec's. An account holding role, proxy, routine or column grants, which
	// the spec cannot express, is not adopted until they are revoked. Off by default: such an
	// account is left alone and reported (Ready=False, AccountExists), and never dropped.
	// +optional
	AdoptExisting bool `json:"adoptExisting,omitempty"`
	// DeletionPolicy says whether deleting the MySQLUser drops the account (Delete, the
	// default) or leaves it (Retain).
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// Grant is a set of privileges on a database, or on one table of it.
// +kubebuilder:validation:XValidation:rule="self.database != '*' || self.privileges.all(p, p.upperAscii().replace('_', ' ') in ['BINLOG MONITOR', 'PROCESS', 'REPLICA MONITOR', 'REPLICATION CLIENT', 'SHOW DATABASES', 'SLAVE MONITOR', 'USAGE'])",message="on *.* only BINLOG MONITOR, PROCESS, REPLICA MONITOR, REPLICATION CLIENT, SHOW DATABASES, SLAVE MONITOR and USAGE are granted: the others write past read_only, reach files or the accounts, or manage the server"
// +kubebuilder:validation:XValidation:rule="!(self.database.lowerAscii() in ['mysql', 'information_schema'] || self.database.matches('^[%_]+$'))",message="database may not be mysql, information_schema or a pattern of wildcards only: nothing is granted on the system schemas"
// +kubebuilder:validation:XValidation:rule="self.database != '*' || self.table == '*'",message="a table needs a database"
type Grant struct {
	// Privileges are privilege names as in GRANT, such as SELECT, INSERT or ALL PRIVILEGES.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z][A-Za-z_ ]*[A-Za-z]$`
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=atomic
	Privileges []string `json:"privileges"`
	// Database the privileges apply to; "*" is every database. As in GRANT, _ and % are
	// wildcards unless escaped with a backslash.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\*|[A-Za-z0-9_$%\\-]+)$`
	Database string `json:"database"`
	// Table the privileges apply to; default "*", every table of the database.
	// +kubebuilder:default="*"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\*|[A-Za-z0-9_$-]+)$`
	// +optional
	Table string `json:"table,omitempty"`
	// GrantOption lets the account pass these privileges on.
	// +optional
	GrantOption bool `json:"grantOption,omitempty"`
}

// MySQLUserStatus is what the operator last did for a MySQLUser.
type MySQLUserStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// PasswordSecretVersion names the Secret, key and Secret resourceVersion
	// (name/key@version) the account's password was last set from, and the physical restore
	// that last replaced the cluster's data, if any; any change sets it again.
	// +optional
	PasswordSecretVersion string `json:"passwordSecretVersion,omitempty"`
	// Account is the account ('user'@'host') this MySQLUser created or adopted. It is
	// recorded before the account is created, so an account that exists while this is
	// unset was made by someone else.
	// +optional
	Account string `json:"account,omitempty"`
	// Conditions: Ready says whether the account matches the spec, and if not, why.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLUserList is a list of MySQLUsers.
type MySQLUserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the users.
	Items []MySQLUser `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mydb,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.status.database`
// +kubebuilder:printcolumn:name="Adopted",type=boolean,JSONPath=`.status.adopted`,priority=1
// +kubebuilder:printcolumn:name="Charset",type=string,JSONPath=`.status.characterSet`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.spec.name) || (size(self.metadata.name) <= 64 && self.metadata.name.matches('^[a-z0-9-]+$') && !(self.metadata.name in ['mysql', 'sys']))",message="metadata.name is the schema's name when spec.name is unset: at most 64 letters, digits and '-', not a system schema; set spec.name"

// MySQLDatabase is a schema in a MySQLCluster.
type MySQLDatabase struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired schema.
	Spec MySQLDatabaseSpec `json:"spec"`
	// Status is what the operator last did.
	// +optional
	Status MySQLDatabaseStatus `json:"status,omitempty"`
}

// MySQLDatabaseSpec is a desired schema.
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",message="name is immutable"
type MySQLDatabaseSpec struct {
	// ClusterRef is the cluster, in the same namespace, the schema lives in.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef ClusterReference `json:"clusterRef"`
	// Name is the schema's name; default the object's name. System schemas are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_$-]+$`
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['mysql', 'information_schema', 'performance_schema', 'sys'])",message="system schemas are not managed"
	// +optional
	Name string `json:"name,omitempty"`
	// CharacterSet is the schema's default character set; empty keeps the server's default.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]*$`
	// +optional
	CharacterSet string `json:"characterSet,omitempty"`
	// Collation is the schema's default collation; empty keeps the character set's default.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]*$`
	// +optional
	Collation string `json:"collation,omitempty"`
	// AdoptExisting lets the MySQLDatabase manage a schema that exists on the server and that
	// it did not create (its character set and collation then follow the spec). It is never
	// dropped, whatever the deletion policy: its data was not the operator's to delete. Off
	// by default: such a schema is left alone and reported (Ready=False, SchemaExists).
	// +optional
	AdoptExisting bool `json:"adoptExisting,omitempty"`
	// DeletionPolicy says whether deleting the MySQLDatabase drops the schema and all its
	// data (Delete) or leaves it (Retain, the default: data is only dropped when asked).
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// MySQLDatabaseStatus is what the operator last did for a MySQLDatabase.
type MySQLDatabaseStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CharacterSet and Collation are the schema's defaults as the server reported them.
	// +optional
	CharacterSet string `json:"characterSet,omitempty"`
	// +optional
	Collation string `json:"collation,omitempty"`
	// Schema is the schema this MySQLDatabase created, recorded before it creates it. A
	// schema it did not create (adopted, or one it is refused) is never dropped.
	// +optional
	Schema string `json:"schema,omitempty"`
	// Database is the schema this MySQLDatabase manages (created or adopted), spec.name or
	// its default, set once it matches the spec. It is for display: Schema alone records
	// ownership.
	// +optional
	Database string `json:"database,omitempty"`
	// Adopted is set when the schema existed before this MySQLDatabase and it manages it
	// through spec.adoptExisting.
	// +optional
	Adopted bool `json:"adopted,omitempty"`
	// Conditions: Ready says whether the schema matches the spec, and if not, why.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLDatabaseList is a list of MySQLDatabases.
type MySQLDatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the databases.
	Items []MySQLDatabase `json:"items"`
}
