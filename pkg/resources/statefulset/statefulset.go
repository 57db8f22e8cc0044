// Package statefulset builds a cluster's StatefulSet.
//
// The pod runs three containers: the server (mysqld or mariadbd), the agent, and the toolbox,
// which runs the agent binary inside the server image so that backups and restores use the
// server image's own tools (pkg/toolbox explains why). Two init
// containers run first: the first copies the agent binary out of the agent image into a shared
// volume, the second runs that binary inside the server image to render my.cnf and initialise
// an empty datadir with the flavor's own tool. Credentials reach the processes only as files of
// mounted Secrets: never as environment variables or arguments.
//
// The update strategy is OnDelete: the operator restarts members itself, replicas first and
// the primary last (docs/architecture.md explains why RollingUpdate cannot do that). The pod
// template carries a restart hash that covers only what needs mysqld to restart, so a change of
// the operator build (the agent image) is applied to running pods in place.
package statefulset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
)

// Volume names and mount paths.
const (
	VolumeData        = "data"
	VolumeConfig      = "config"
	VolumeConf        = "conf"
	VolumeRun         = "run"
	VolumeTmp         = "tmp"
	VolumeServerTmp   = "server-tmp"
	VolumeAgentBin    = "agent-bin"
	VolumeCredentials = "credentials"
	VolumeTLS         = "tls"

	MountData        = "/var/lib/mysql"
	MountConfig      = "/etc/mysqlop/config"
	MountConf        = "/etc/mysqlop/conf"
	MountRun         = "/run/mysqld"
	MountAgentBin    = "/opt/mysqlop/bin"
	MountCredentials = "/etc/mysqlop/credentials"

	// AgentBinary is the agent's path in the agent image.
	AgentBinary = "/mysql-agent"
	// ToolboxSocket is where the toolbox container serves the backup tools to the agent.
	ToolboxSocket = MountRun + "/toolbox.sock"
)

// RunAsUser is the uid (and gid) every container runs as: the mysql user of the official images.
const RunAsUser int64 = 999

// DefaultStorage is the data volume size when the spec gives none.
var DefaultStorage = resource.MustParse("10Gi")

// Params are the inputs of the builder that do not come from the MySQLCluster.
type Params struct {
	// ServerImage is the full server image reference, tag included.
	ServerImage string
	// AgentImage is the full agent image reference.
	AgentImage string
	// OperatorVersion is the operator build, as a label value.
	OperatorVersion string
	// ConfigHash is the hash of the my.cnf ConfigMap data; a change restarts the members.
	ConfigHash string
}

// ServerCommand is the server binary of flavor f: MariaDB 11 images no longer ship mysqld.
func ServerCommand(f v1alpha1.Flavor) string {
	if f == v1alpha1.FlavorMariaDB {
		return "mariadbd"
	}
	return "mysqld"
}

// New returns the StatefulSet of c, which must be defaulted and valid.
func New(c *v1alpha1.MySQLCluster, p Params) *appsv1.StatefulSet {
	tpl := podTemplate(c, p)
	tpl.Annotations[v1alpha1.AnnotationRestartHash] = RestartHash(&tpl.Spec, p.ConfigHash)

	sts := &appsv1.StatefulSet{
		ObjectMeta: resources.ObjectMeta(c, resources.StatefulSetName(c), p.OperatorVersion),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(c.Spec.Members),
			ServiceName:         resources.HeadlessServiceName(c),
			Selector:            &metav1.LabelSelector{MatchLabels: resources.SelectorLabels(c)},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template:            tpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: VolumeData, Labels: resources.SelectorLabels(c)},
				Spec:       claimSpec(c),
			}},
			// Data outlives the cluster object: deleting a MySQLCluster or scaling it down
			// keeps the volumes (docs/user-guide.md, "Deleting a cluster").
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	return sts
}

// RestartHash hashes what needs the server to restart when it changes: the pod spec and the
// my.cnf content (by its hash). The agent's image (in its container and in the init container
// that installs it) is left out: the operator moves running pods to a new agent image in place.
func RestartHash(spec *corev1.PodSpec, configHash string) string {
	s := spec.DeepCopy()
	for i := range s.Containers {
		if s.Containers[i].Name == resources.ContainerAgent {
			s.Containers[i].Image = ""
		}
	}
	for i := range s.InitContainers {
		if s.InitContainers[i].Name == resources.ContainerInitCopy {
			s.InitContainers[i].Image = ""
		}
	}
	return resources.Hash(struct {
		Spec       *corev1.PodSpec
		ConfigHash string
	}{s, configHash})
}

func claimSpec(c *v1alpha1.MySQLCluster) corev1.PersistentVolumeClaimSpec {
	var spec corev1.PersistentVolumeClaimSpec
	if c.Spec.VolumeClaimTemplate != nil {
		spec = *c.Spec.VolumeClaimTemplate.DeepCopy()
	}
	if len(spec.AccessModes) == 0 {
		spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	if _, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		if spec.Resources.Requests == nil {
			spec.Resources.Requests = corev1.ResourceList{}
		}
		spec.Resources.Requests[corev1.ResourceStorage] = DefaultStorage
	}
	return spec
}

func podTemplate(c *v1alpha1.MySQLCluster, p Params) corev1.PodTemplateSpec {
	labels := resources.MergeLabels(resources.Labels(c, p.OperatorVersion), c.Spec.PodLabels)
	annotations := map[string]string{}
	for k, v := range c.Spec.PodAnnotations {
		annotations[k] = v
	}
	annotations[v1alpha1.AnnotationConfigHash] = p.ConfigHash
	annotations[v1alpha1.AnnotationVersion] = c.Spec.Version
	if !c.Spec.TLS.Disabled {
		annotations[v1alpha1.AnnotationTLS] = "true"
	}

	affinity := c.Spec.Affinity.DeepCopy()
	if affinity == nil {
		affinity = defaultAffinity(c)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{installAgentContainer(p), initContainer(c, p)},
			Containers:     []corev1.Container{serverContainer(c, p), agentContainer(c, p), toolboxContainer(p)},
			Volumes:        volumes(c),
			// The agent fences a stray writable server by killing it (pkg/agent/kill.go).
			ShareProcessNamespace:         ptr.To(true),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](60),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr.To(RunAsUser),
				RunAsGroup:     ptr.To(RunAsUser),
				FSGroup:        ptr.To(RunAsUser),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Affinity:          affinity,
			NodeSelector:      c.Spec.NodeSelector,
			Tolerations:       c.Spec.Tolerations,
			PriorityClassName: c.Spec.PriorityClassName,
			ImagePullSecrets:  c.Spec.ImagePullSecrets,
		},
	}
}

func defaultAffinity(c *v1alpha1.MySQLCluster) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: resources.SelectorLabels(c)},
			},
		}},
	}}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// podEnv is the downward-API identity of the pod; it carries no secret.
func podEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	return []corev1.EnvVar{field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace")}
}

func installAgentContainer(p Params) corev1.Container {
	return corev1.Container{
		Name:            resources.ContainerInitCopy,
		Image:           p.AgentImage,
		Command:         []string{AgentBinary, "install", "--dest=" + MountAgentBin},
		VolumeMounts:    []corev1.VolumeMount{{Name: VolumeAgentBin, MountPath: MountAgentBin}},
		SecurityContext: containerSecurityContext(),
	}
}

func initContainer(c *v1alpha1.MySQLCluster, p Params) corev1.Container {
	return corev1.Container{
		Name:  resources.ContainerInit,
		Image: p.ServerImage,
		Command: []string{
			MountAgentBin + "/mysql-agent", "init",
			"--flavor=" + string(c.Spec.Flavor),
			fmt.Sprintf("--base-server-id=%d", c.Spec.BaseServerID),
			"--config-template=" + MountConfig + "/" + configmap.Key,
			"--conf-dir=" + MountConf,
			"--datadir=" + configmap.DataDir,
			"--credentials-dir=" + MountCredentials,
			"--peer-service=" + resources.HeadlessServiceName(c),
			fmt.Sprintf("--agent-port=%d", resources.PortAgent),
			agentTrust(c),
		},
		Env: podEnv(),
		// The TLS files too: the server init starts to set up the datadir reads my.cnf, which
		// names them.
		VolumeMounts:    append(append(serverMounts(), corev1.VolumeMount{Name: VolumeAgentBin, MountPath: MountAgentBin, ReadOnly: true}, credentialsMount()), tlsMounts(c)...),
		SecurityContext: containerSecurityContext(),
	}
}

func serverMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: VolumeData, MountPath: MountData},
		{Name: VolumeConfig, MountPath: MountConfig, ReadOnly: true},
		{Name: VolumeConf, MountPath: MountConf},
		{Name: VolumeRun, MountPath: MountRun},
		{Name: VolumeTmp, MountPath: "/tmp"},
	}
}

// runningServerMounts are the running server's: the configuration read-only (else an account
// able to write files could add an option file, such as an init_file, and own the server at
// its next start) and a /tmp of its own, the only directory its file operations reach
// (secure_file_priv): the agent's and the toolbox's /tmp holds option files with credentials.
func runningServerMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: VolumeData, MountPath: MountData},
		{Name: VolumeConfig, MountPath: MountConfig, ReadOnly: true},
		{Name: VolumeConf, MountPath: MountConf, ReadOnly: true},
		{Name: VolumeRun, MountPath: MountRun},
		{Name: VolumeServerTmp, MountPath: configmap.ServerTmpDir},
	}
}

// agentTrust is how init trusts the peers' agents: with TLS on, their certificate is the
// cluster's, verified under its CA for the peer's DNS name; without, the pinned agent certificate.
func agentTrust(c *v1alpha1.MySQLCluster) string {
	if c.Spec.TLS.Disabled {
		return "--agent-tls-cert-file=" + MountCredentials + "/" + resources.SecretKeyAgentTLSCert
	}
	return "--agent-ca-file=" + configmap.TLSCAFile
}

// tlsMounts mount the cluster's TLS Secret where my.cnf names its files: in the server, which
// serves them, in init, whose temporary server reads the same my.cnf, and in the agent, which
// makes the server read them again when they change.
func tlsMounts(c *v1alpha1.MySQLCluster) []corev1.VolumeMount {
	if c.Spec.TLS.Disabled {
		return nil
	}
	return []corev1.VolumeMount{{Name: VolumeTLS, MountPath: configmap.TLSDir, ReadOnly: true}}
}

func credentialsMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: VolumeCredentials, MountPath: MountCredentials, ReadOnly: true}
}

func serverContainer(c *v1alpha1.MySQLCluster, p Params) corev1.Container {
	tcp := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(resources.PortNameMySQL)}}
	return corev1.Container{
		Name:         resources.ContainerMySQL,
		Image:        p.ServerImage,
		Command:      []string{ServerCommand(c.Spec.Flavor), "--defaults-file=" + MountConf + "/my.cnf"},
		Ports:        []corev1.ContainerPort{{Name: resources.PortNameMySQL, ContainerPort: resources.PortMySQL, Protocol: corev1.ProtocolTCP}},
		Resources:    *c.Spec.Resources.DeepCopy(),
		VolumeMounts: append(runningServerMounts(), tlsMounts(c)...),
		// Crash recovery of a large datadir can take long: allow an hour before liveness applies.
		StartupProbe:    &corev1.Probe{ProbeHandler: tcp, PeriodSeconds: 10, FailureThreshold: 360},
		LivenessProbe:   &corev1.Probe{ProbeHandler: tcp, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3},
		SecurityContext: containerSecurityContext(),
	}
}

func agentContainer(c *v1alpha1.MySQLCluster, p Params) corev1.Container {
	get := func(path string) corev1.ProbeHandler {
		// The kubelet does not verify the certificate of an HTTPS probe.
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(resources.PortNameAgent), Scheme: corev1.URISchemeHTTPS}}
	}
	cmd := []string{
		AgentBinary, "serve",
		"--flavor=" + string(c.Spec.Flavor),
		fmt.Sprintf("--listen=:%d", resources.PortAgent),
		fmt.Sprintf("--metrics-listen=:%d", resources.PortMetrics),
		"--socket=" + configmap.SocketPath,
		"--credentials-dir=" + MountCredentials,
		"--toolbox-socket=" + ToolboxSocket,
	}
	if c.Spec.TLS.Disabled {
		cmd = append(cmd, "--tls-cert-file="+MountCredentials+"/"+resources.SecretKeyAgentTLSCert,
			"--tls-key-file="+MountCredentials+"/"+resources.SecretKeyAgentTLSKey)
	} else {
		// The API is served with the cluster's certificate, renewed with it.
		cmd = append(cmd, "--tls-cert-file="+configmap.TLSCertFile, "--tls-key-file="+configmap.TLSKeyFile,
			"--server-tls-dir="+configmap.TLSDir)
	}
	return corev1.Container{
		Name:    resources.ContainerAgent,
		Image:   p.AgentImage,
		Command: cmd,
		Env:     podEnv(),
		Ports: []corev1.ContainerPort{
			{Name: resources.PortNameAgent, ContainerPort: resources.PortAgent, Protocol: corev1.ProtocolTCP},
			{Name: resources.PortNameMetrics, ContainerPort: resources.PortMetrics, Protocol: corev1.ProtocolTCP},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		VolumeMounts: append(append(toolMounts(), credentialsMount()), tlsMounts(c)...),
		// Readiness is the agent's verdict: mysqld answers and plays its role correctly.
		ReadinessProbe:  &corev1.Probe{ProbeHandler: get("/readyz"), PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 2},
		LivenessProbe:   &corev1.Probe{ProbeHandler: get("/healthz"), PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3},
		SecurityContext: containerSecurityContext(),
	}
}

// toolboxContainer runs the backup tools of the server image for the agent. It mounts what the
// tools read and write at the agent's and the server's paths: the datadir, the server's socket
// directory (which also holds the toolbox socket) and /tmp (the tools' option files).
func toolboxContainer(p Params) corev1.Container {
	return corev1.Container{
		Name:    resources.ContainerToolbox,
		Image:   p.ServerImage,
		Command: []string{MountAgentBin + "/mysql-agent", "toolbox", "--socket=" + ToolboxSocket},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			// A physical backup's prepare step sizes its buffer pool at 100 MiB by default.
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		VolumeMounts:    append(toolMounts(), corev1.VolumeMount{Name: VolumeAgentBin, MountPath: MountAgentBin, ReadOnly: true}),
		SecurityContext: containerSecurityContext(),
	}
}

// toolMounts are the agent's and the toolbox's shared paths: a tool run in the toolbox sees
// the files the agent names (datadir, staging, option files) where the agent sees them.
func toolMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: VolumeData, MountPath: MountData},
		{Name: VolumeRun, MountPath: MountRun},
		{Name: VolumeTmp, MountPath: "/tmp"},
	}
}

func volumes(c *v1alpha1.MySQLCluster) []corev1.Volume {
	// The credentials volume projects the internal Secret and, when the user brings one, the
	// root password from their Secret under the same file name.
	sources := []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: resources.CredentialsSecretName(c)},
	}}}
	if r := c.Spec.RootPasswordSecretRef; r != nil {
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: r.Name},
			Items:                []corev1.KeyToPath{{Key: r.Key, Path: resources.SecretKeyRootPassword}},
		}})
	}
	empty := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	vols := []corev1.Volume{
		{Name: VolumeConfig, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: resources.ConfigMapName(c)},
		}}},
		{Name: VolumeCredentials, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: sources, DefaultMode: ptr.To[int32](0o440),
		}}},
		empty(VolumeConf), empty(VolumeRun), empty(VolumeTmp), empty(VolumeServerTmp), empty(VolumeAgentBin),
	}
	if !c.Spec.TLS.Disabled {
		// Group-readable only: the server (uid 999, fsGroup 999) reads the key.
		vols = append(vols, corev1.Volume{Name: VolumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: resources.TLSSecretName(c), DefaultMode: ptr.To[int32](0o440),
		}}})
	}
	return vols
}
