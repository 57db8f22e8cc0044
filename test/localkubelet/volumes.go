package localkubelet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// prepareVolumes materialises every volume of the pod on the host and returns its path by
// volume name. Files of configMap, secret, downwardAPI and projected volumes are written at pod
// start; those of secret and configMap volumes are refreshed while the pod runs
// (refreshVolumes).
func (w *podWorker) prepareVolumes(ctx context.Context) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range w.pod.Spec.Volumes {
		p, err := w.prepareVolume(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

func (w *podWorker) prepareVolume(ctx context.Context, v corev1.Volume) (string, error) {
	dir := filepath.Join(w.dir, "volumes", v.Name)
	switch {
	case v.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		return dir, os.Chmod(dir, 0o777)
	case v.HostPath != nil:
		if v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectoryOrCreate {
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				return "", err
			}
		}
		return v.HostPath.Path, nil
	case v.PersistentVolumeClaim != nil:
		return w.claimPath(ctx, v.PersistentVolumeClaim.ClaimName)
	}
	files, err := w.volumeFiles(ctx, v)
	if err != nil {
		return "", err
	}
	return dir, w.writeFiles(dir, files)
}

// volumeFiles are the files of a configMap, secret, downwardAPI or projected volume.
func (w *podWorker) volumeFiles(ctx context.Context, v corev1.Volume) (map[string]file, error) {
	files := map[string]file{}
	var err error
	switch {
	case v.ConfigMap != nil:
		err = w.configMapFiles(ctx, files, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode))
	case v.Secret != nil:
		err = w.secretFiles(ctx, files, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode))
	case v.DownwardAPI != nil:
		err = w.downwardFiles(files, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode))
	case v.Projected != nil:
		m := mode(v.Projected.DefaultMode)
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				err = w.configMapFiles(ctx, files, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, m)
			case s.Secret != nil:
				err = w.secretFiles(ctx, files, s.Secret.Name, s.Secret.Items, s.Secret.Optional, m)
			case s.DownwardAPI != nil:
				err = w.downwardFiles(files, s.DownwardAPI.Items, m)
			case s.ServiceAccountToken != nil:
				err = w.tokenFile(ctx, files, s.ServiceAccountToken, m)
			default:
				err = fmt.Errorf("unsupported projected source")
			}
			if err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("unsupported volume type")
	}
	return files, err
}

// refreshInterval is how often secret and configMap volumes are brought up to date. A kubelet
// takes up to about a minute (its sync period plus its cache); this runtime is quicker so that
// tests of certificate rotation do not wait.
const refreshInterval = 5 * time.Second

// refreshVolumes rewrites the files of the pod's secret and configMap volumes that changed, as
// a kubelet does (projected volumes, which hold tokens and credentials here, keep their files).
// It runs until ctx ends.
func (w *podWorker) refreshVolumes(ctx context.Context) {
	t := time.NewTicker(refreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		paths := w.volumes
		w.mu.Unlock()
		for _, v := range w.pod.Spec.Volumes {
			if v.Secret == nil && v.ConfigMap == nil || paths[v.Name] == "" {
				continue
			}
			files, err := w.volumeFiles(ctx, v)
			if err != nil {
				continue // a Secret deleted for a while keeps its old files, as in a kubelet
			}
			changed := map[string]file{}
			for name, f := range files {
				if old, err := os.ReadFile(filepath.Join(paths[v.Name], name)); err != nil || !bytes.Equal(old, f.data) {
					changed[name] = f
				}
			}
			if len(changed) > 0 {
				if err := w.writeFiles(paths[v.Name], changed); err != nil {
					w.log().Info("Refreshing a volume failed", "volume", v.Name, "err", err)
				}
			}
		}
	}
}

type file struct {
	data []byte
	mode os.FileMode
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

// writeFiles writes files under dir, owned by root and the pod's fsGroup as a kubelet does.
func (w *podWorker) writeFiles(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gid := -1
	if sc := w.pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		gid = int(*sc.FSGroup)
	}
	for name, f := range files {
		if strings.Contains(name, "..") {
			return fmt.Errorf("file name %q leaves the volume", name)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			return err
		}
		if gid >= 0 {
			if err := os.Chown(p, 0, gid); err != nil {
				return err
			}
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func keyFiles(files map[string]file, data map[string][]byte, items []corev1.KeyToPath, def os.FileMode) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = file{data: v, mode: def}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %s not found", it.Key)
		}
		files[it.Path] = file{data: v, mode: itemMode(it.Mode, def)}
	}
	return nil
}

func (w *podWorker) configMapFiles(ctx context.Context, files map[string]file, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) error {
	cm, err := w.r.kube.CoreV1().ConfigMaps(w.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get configmap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(files, data, items, def)
}

func (w *podWorker) secretFiles(ctx context.Context, files map[string]file, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) error {
	s, err := w.r.kube.CoreV1().Secrets(w.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get secret %s: %w", name, err)
	}
	return keyFiles(files, s.Data, items, def)
}

func (w *podWorker) downwardFiles(files map[string]file, items []corev1.DownwardAPIVolumeFile, def os.FileMode) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI item %s: only fieldRef is supported", it.Path)
		}
		v, err := w.fieldValue(it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		files[it.Path] = file{data: []byte(v), mode: itemMode(it.Mode, def)}
	}
	return nil
}

// tokenFile requests a service-account token bound to the pod, as the kubelet does.
func (w *podWorker) tokenFile(ctx context.Context, files map[string]file, p *corev1.ServiceAccountTokenProjection, def os.FileMode) error {
	sa := w.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: w.pod.Name, UID: w.pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	tr, err := w.r.kube.CoreV1().ServiceAccounts(w.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request token of service account %s: %w", sa, err)
	}
	files[p.Path] = file{data: []byte(tr.Status.Token), mode: def}
	return nil
}

// claimPath is the host directory of the volume bound to the claim; the directory outlives
// the pod, which is what keeps a member's data across pod restarts.
func (w *podWorker) claimPath(ctx context.Context, claim string) (string, error) {
	path, err := ClaimPath(ctx, w.r.kube, w.pod.Namespace, claim)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", err
	}
	if sc := w.pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := os.Chown(path, 0, int(*sc.FSGroup)); err != nil {
			return "", err
		}
		if err := os.Chmod(path, 0o2775); err != nil {
			return "", err
		}
	}
	return path, nil
}

// ClaimPath is the host directory of the volume bound to a claim (a hostPath or local
// volume).
func ClaimPath(ctx context.Context, kube kubernetes.Interface, namespace, claim string) (string, error) {
	pvc, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get claim %s: %w", claim, err)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("claim %s is not bound yet", claim)
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get volume %s: %w", pvc.Spec.VolumeName, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("volume %s is neither hostPath nor local", pv.Name)
}
