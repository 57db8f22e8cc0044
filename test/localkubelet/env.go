package localkubelet

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fieldValue answers a downward-API field path.
func (w *podWorker) fieldValue(fp string) (string, error) {
	p := w.pod
	switch fp {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return w.net.IP.String(), nil
	case "status.hostIP", "status.hostIPs":
		return w.r.gateway.String(), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.Labels, "metadata.annotations": p.Annotations} {
		if k, ok := strings.CutPrefix(fp, prefix+"['"); ok && strings.HasSuffix(k, "']") {
			return m[strings.TrimSuffix(k, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported field path %s", fp)
}

// containerEnv resolves a container's environment as a kubelet does: defaults, envFrom, then
// env in order with $(VAR) references to what came before.
func (w *podWorker) containerEnv(ctx context.Context, c *corev1.Container) ([]string, map[string]string, error) {
	vars := map[string]string{
		"PATH":                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME":                w.hostname(),
		"KUBERNETES_SERVICE_HOST": w.r.opts.APIServerHost,
		"KUBERNETES_SERVICE_PORT": w.r.opts.APIServerPort,
	}
	order := []string{"PATH", "HOSTNAME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := w.r.kube.CoreV1().ConfigMaps(w.pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("envFrom configmap %s: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := w.r.kube.CoreV1().Secrets(w.pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for k, v := range data {
			set(from.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		v, err := w.envValue(ctx, c, e, vars)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		set(e.Name, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, vars, nil
}

func (w *podWorker) envValue(ctx context.Context, c *corev1.Container, e corev1.EnvVar, vars map[string]string) (string, error) {
	src := e.ValueFrom
	if src == nil {
		return Expand(e.Value, vars), nil
	}
	switch {
	case src.FieldRef != nil:
		return w.fieldValue(src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		s, err := w.r.kube.CoreV1().Secrets(w.pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := s.Data[r.Key]; ok {
				return string(v), nil
			}
			err = fmt.Errorf("secret %s has no key %s", r.Name, r.Key)
		}
		if r.Optional != nil && *r.Optional {
			return "", nil
		}
		return "", err
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		cm, err := w.r.kube.CoreV1().ConfigMaps(w.pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := cm.Data[r.Key]; ok {
				return v, nil
			}
			err = fmt.Errorf("configmap %s has no key %s", r.Name, r.Key)
		}
		if r.Optional != nil && *r.Optional {
			return "", nil
		}
		return "", err
	case src.ResourceFieldRef != nil:
		r := src.ResourceFieldRef
		var q = c.Resources.Limits
		name := strings.TrimPrefix(r.Resource, "limits.")
		if strings.HasPrefix(r.Resource, "requests.") {
			q, name = c.Resources.Requests, strings.TrimPrefix(r.Resource, "requests.")
		}
		v, ok := q[corev1.ResourceName(name)]
		if !ok {
			return "0", nil
		}
		div := r.Divisor
		if div.IsZero() {
			if name == string(corev1.ResourceCPU) {
				return fmt.Sprint((v.MilliValue() + 999) / 1000), nil
			}
			return fmt.Sprint(v.Value()), nil
		}
		return fmt.Sprint((v.MilliValue() + div.MilliValue() - 1) / div.MilliValue()), nil
	}
	return "", fmt.Errorf("unsupported valueFrom")
}

// Expand replaces $(NAME) with the value of NAME where it is defined, and $$ with $, as the
// kubelet does; unknown references stay as written.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// argv is the command line of c on this machine: images are ignored, so a container without a
// command runs the binary its image name maps to, and a command the project's images carry
// (such as /mysql-agent) is replaced by its build on this machine.
func (r *Runtime) argv(c *corev1.Container, vars map[string]string) ([]string, error) {
	var argv []string
	if len(c.Command) == 0 {
		// name:tag first, so that two builds (say, operator versions) can both run.
		name := path.Base(c.Image)
		bin, ok := r.opts.Images[name]
		if i := strings.IndexAny(name, ":@"); !ok && i >= 0 {
			bin, ok = r.opts.Images[name[:i]]
		}
		if !ok {
			return nil, fmt.Errorf("container %s has no command and image %s maps to no binary on this machine", c.Name, c.Image)
		}
		argv = []string{bin}
	} else {
		argv = append(argv, c.Command...)
		if bin, ok := r.opts.Commands[argv[0]]; ok {
			argv[0] = bin
		}
	}
	argv = append(argv, c.Args...)
	for i := range argv {
		argv[i] = Expand(argv[i], vars)
	}
	return argv, nil
}
