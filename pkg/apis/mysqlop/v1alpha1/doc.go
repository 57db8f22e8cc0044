// Package v1alpha1 is the v1alpha1 version of the mysqlop.io API: MySQLCluster, MySQLBackup,
// MySQLBackupSchedule and MySQLRestore.
//
// Schema rules that the API server can enforce live here as kubebuilder markers and become the
// CRDs in contrib/manifests/crds; rules that need more than one object or the running state
// (a version downgrade, say) live in validation.go and are enforced by the controllers.
//
// +k8s:deepcopy-gen=package
// +groupName=mysqlop.io
package v1alpha1
