package statefulset

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func params() Params {
	return Params{ServerImage: "mariadb:10.11.6", AgentImage: "agent:v1", OperatorVersion: "v1", ConfigHash: "cfg1"}
}

func container(t *testing.T, spec *corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func TestShape(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = v1alpha1.FlavorMariaDB; c.Spec.Members = 5 })
	s := New(c, params())
	if *s.Spec.Replicas != 5 || s.Spec.ServiceName != "db-headless" {
		t.Errorf("replicas %d serviceName %q", *s.Spec.Replicas, s.Spec.ServiceName)
	}
	if s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Errorf("update strategy %q: the operator orders restarts itself", s.Spec.UpdateStrategy.Type)
	}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("PVC retention %+v: data must never be deleted implicitly", p)
	}
	got := s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if got.Cmp(DefaultStorage) != 0 {
		t.Errorf("default storage %s", got.String())
	}
	spec := &s.Spec.Template.Spec
	if m := container(t, spec, resources.ContainerMySQL); m.Image != "mariadb:10.11.6" || m.Command[0] != "mariadbd" {
		t.Errorf("server container %q %v", m.Image, m.Command)
	}
	if a := container(t, spec, resources.ContainerAgent); a.Image != "agent:v1" || a.ReadinessProbe == nil || a.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("agent container %q probe %+v", a.Image, a.ReadinessProbe)
	}
	// The agent's backup tools run in the toolbox: the server image, the agent's socket to it,
	// and the paths the tools share with the agent (datadir, option files in /tmp).
	tb, agent := container(t, spec, resources.ContainerToolbox), container(t, spec, resources.ContainerAgent)
	if tb.Image != "mariadb:10.11.6" || !slices.Contains(tb.Command, "--socket="+ToolboxSocket) || !slices.Contains(agent.Command, "--toolbox-socket="+ToolboxSocket) {
		t.Errorf("toolbox %q %v, agent %v", tb.Image, tb.Command, agent.Command)
	}
	// With TLS on (the default) the agent API is served with the cluster's certificate, which
	// init verifies under the cluster's CA; probed over HTTPS.
	if !slices.Contains(agent.Command, "--tls-cert-file="+configmap.TLSCertFile) || !slices.Contains(agent.Command, "--tls-key-file="+configmap.TLSKeyFile) ||
		agent.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || agent.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("agent TLS: command %v, probes %+v %+v", agent.Command, agent.ReadinessProbe.HTTPGet, agent.LivenessProbe.HTTPGet)
	}
	if in := container(t, spec, resources.ContainerInit); !slices.Contains(in.Command, "--agent-ca-file="+configmap.TLSCAFile) ||
		!slices.Contains(in.Command, "--peer-service=db-headless") {
		t.Errorf("init command %v", in.Command)
	}
	// The toolbox runs the tools on the agent's paths; it needs neither secret volume.
	for _, m := range agent.VolumeMounts {
		if m.Name != VolumeCredentials && m.Name != VolumeTLS && !slices.ContainsFunc(tb.VolumeMounts, func(o corev1.VolumeMount) bool { return o.Name == m.Name && o.MountPath == m.MountPath }) {
			t.Errorf("the toolbox lacks the agent's mount %+v", m)
		}
	}
	// TLS is on by default: the server and the agent mount the TLS Secret where my.cnf and
	// the agent's flag name it, and the template says so.
	server := container(t, spec, resources.ContainerMySQL)
	for _, ctr := range []corev1.Container{server, agent, container(t, spec, resources.ContainerInit)} {
		if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == VolumeTLS && m.MountPath == configmap.TLSDir && m.ReadOnly
		}) {
			t.Errorf("%s does not mount the TLS Secret: %+v", ctr.Name, ctr.VolumeMounts)
		}
	}
	if !slices.Contains(agent.Command, "--server-tls-dir="+configmap.TLSDir) || s.Spec.Template.Annotations[v1alpha1.AnnotationTLS] != "true" {
		t.Errorf("agent command %v, template annotations %v", agent.Command, s.Spec.Template.Annotations)
	}
	if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == VolumeTLS && v.Secret != nil && v.Secret.SecretName == "db-tls" && *v.Secret.DefaultMode == 0o440
	}) {
		t.Errorf("no TLS volume of Secret db-tls: %+v", spec.Volumes)
	}
	if spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot || *spec.SecurityContext.RunAsUser == 0 {
		t.Error("pod must run as non-root")
	}
	for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		sc := ctr.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) == 0 {
			t.Errorf("container %s lacks a restricted security context", ctr.Name)
		}
	}
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil || len(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("default affinity must prefer spreading members over nodes")
	}
	if s.Spec.Template.Labels[v1alpha1.LabelOperatorVersion] != "v1" || s.Spec.Template.Annotations[v1alpha1.AnnotationVersion] != "10.11.6" {
		t.Errorf("template metadata %v %v", s.Spec.Template.Labels, s.Spec.Template.Annotations)
	}
}

// No password may reach a process through its environment or its arguments.
// The running server can write neither its configuration nor the other containers' files:
// its conf is read-only and its /tmp (secure_file_priv) is a volume no other container mounts.
func TestServerWritesOnlyItsOwnFiles(t *testing.T) {
	spec := New(testutil.Cluster("ns", "db"), params()).Spec.Template.Spec
	for _, m := range container(t, &spec, resources.ContainerMySQL).VolumeMounts {
		switch {
		case (m.Name == VolumeConf || m.Name == VolumeConfig || m.Name == VolumeCredentials || m.Name == VolumeAgentBin) && !m.ReadOnly:
			t.Errorf("server mounts %s writable", m.Name)
		case m.Name == VolumeTmp:
			t.Errorf("server mounts the agent's and toolbox's %s", m.Name)
		case m.MountPath == "/tmp" && m.Name != VolumeServerTmp:
			t.Errorf("server /tmp is %s", m.Name)
		}
	}
	for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, m := range ctr.VolumeMounts {
			if m.Name == VolumeServerTmp && ctr.Name != resources.ContainerMySQL {
				t.Errorf("%s mounts the server's own /tmp", ctr.Name)
			}
		}
	}
}

func TestNoSecretInEnvOrArgs(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.RootPasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "mine", Key: "pw"}
	})
	spec := New(c, params()).Spec.Template.Spec
	for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range ctr.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("container %s: env %s comes from a Secret", ctr.Name, e.Name)
			}
		}
		if len(ctr.EnvFrom) > 0 {
			t.Errorf("container %s uses envFrom", ctr.Name)
		}
		for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
			if strings.Contains(strings.ToLower(a), "password=") {
				t.Errorf("container %s: argument %q carries a password", ctr.Name, a)
			}
		}
	}
	// The user's root password is projected as a file instead.
	var found bool
	for _, v := range spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name == "mine" && len(src.Secret.Items) == 1 &&
				src.Secret.Items[0].Key == "pw" && src.Secret.Items[0].Path == resources.SecretKeyRootPassword {
				found = true
			}
		}
	}
	if !found {
		t.Error("the referenced root password Secret is not projected into the credentials volume")
	}
}

func TestRestartHash(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	base := New(c, params()).Spec.Template.Annotations[v1alpha1.AnnotationRestartHash]

	agentOnly := params()
	agentOnly.AgentImage = "agent:v2"
	agentOnly.OperatorVersion = "v2"
	if got := New(c, agentOnly).Spec.Template.Annotations[v1alpha1.AnnotationRestartHash]; got != base {
		t.Error("a new agent image or operator version changed the restart hash: it would restart mysqld")
	}

	for name, change := range map[string]func(*Params, *v1alpha1.MySQLCluster){
		"server image": func(p *Params, _ *v1alpha1.MySQLCluster) { p.ServerImage = "mariadb:10.11.8" },
		"config":       func(p *Params, _ *v1alpha1.MySQLCluster) { p.ConfigHash = "cfg2" },
		"resources": func(_ *Params, c *v1alpha1.MySQLCluster) {
			c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		},
	} {
		p := params()
		cc := c.DeepCopy()
		change(&p, cc)
		if New(cc, p).Spec.Template.Annotations[v1alpha1.AnnotationRestartHash] == base {
			t.Errorf("changing the %s did not change the restart hash", name)
		}
	}
}

func TestUserPodSettings(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.PodLabels = map[string]string{"team": "a", v1alpha1.LabelCluster: "hijack"}
		c.Spec.PodAnnotations = map[string]string{"note": "x"}
		c.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		c.Spec.PriorityClassName = "high"
		c.Spec.Affinity = &corev1.Affinity{}
		c.Spec.VolumeClaimTemplate = &corev1.PersistentVolumeClaimSpec{StorageClassName: ptrTo("fast")}
	})
	s := New(c, params())
	tpl := s.Spec.Template
	if tpl.Labels["team"] != "a" || tpl.Labels[v1alpha1.LabelCluster] != "db" {
		t.Errorf("labels %v: user labels must be added but never override ours", tpl.Labels)
	}
	if tpl.Annotations["note"] != "x" || tpl.Spec.NodeSelector["disk"] != "ssd" || tpl.Spec.PriorityClassName != "high" {
		t.Error("user pod settings missing")
	}
	if tpl.Spec.Affinity.PodAntiAffinity != nil {
		t.Error("a user affinity must replace the default")
	}
	vct := s.Spec.VolumeClaimTemplates[0].Spec
	if *vct.StorageClassName != "fast" || len(vct.AccessModes) != 1 {
		t.Errorf("claim template %+v", vct)
	}
	if c.Spec.VolumeClaimTemplate.Resources.Requests != nil {
		t.Error("New modified the cluster's claim template")
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestTLSDisabledMountsNothing(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.TLS.Disabled = true })
	s := New(c, params())
	spec := &s.Spec.Template.Spec
	for _, ctr := range spec.Containers {
		if slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == VolumeTLS }) {
			t.Errorf("%s mounts TLS with TLS disabled", ctr.Name)
		}
	}
	if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == VolumeTLS }) || s.Spec.Template.Annotations[v1alpha1.AnnotationTLS] != "" {
		t.Error("a TLS volume or annotation with TLS disabled")
	}
	agent := container(t, spec, resources.ContainerAgent)
	if slices.ContainsFunc(agent.Command, func(a string) bool { return strings.HasPrefix(a, "--server-tls-dir") }) {
		t.Error("the agent watches TLS files with TLS disabled")
	}
	// Without TLS the agent API keeps the pinned certificate of the credentials Secret.
	certFile, keyFile := MountCredentials+"/"+resources.SecretKeyAgentTLSCert, MountCredentials+"/"+resources.SecretKeyAgentTLSKey
	if !slices.Contains(agent.Command, "--tls-cert-file="+certFile) || !slices.Contains(agent.Command, "--tls-key-file="+keyFile) {
		t.Errorf("agent command %v", agent.Command)
	}
	if in := container(t, spec, resources.ContainerInit); !slices.Contains(in.Command, "--agent-tls-cert-file="+certFile) {
		t.Errorf("init command %v", in.Command)
	}
}
