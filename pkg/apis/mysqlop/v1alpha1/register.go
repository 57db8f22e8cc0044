package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop"
)

// SchemeGroupVersion is the group and version of every kind in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: mysqlop.GroupName, Version: "v1alpha1"}

// Kind returns a GroupKind for the given kind name in this group.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource returns a GroupResource for the given resource name in this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&MySQLCluster{}, &MySQLClusterList{},
		&MySQLBackup{}, &MySQLBackupList{},
		&MySQLBackupSchedule{}, &MySQLBackupScheduleList{},
		&MySQLRestore{}, &MySQLRestoreList{},
		&MySQLUser{}, &MySQLUserList{},
		&MySQLDatabase{}, &MySQLDatabaseList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
