package framework

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// StorageClass is the default StorageClass of the control plane. Its provisioner runs inside
// the test binary: for every claim of the class it creates a hostPath volume under the control
// plane's directory, pre-bound to the claim; the real PV controller then binds the two, and
// the real scheduler can place pods that use them.
const StorageClass = "standard"

const provisionerName = "mysqlop.io/test-framework"

func startProvisioner(ctx context.Context, kube kubernetes.Interface, root string) error {
	immediate := storagev1.VolumeBindingImmediate
	retain := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisionerName,
		VolumeBindingMode: &immediate,
		ReclaimPolicy:     &retain,
	}
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class: %w", err)
	}
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().PersistentVolumeClaims().Informer()
	provision := func(obj any) {
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != StorageClass {
			return
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + string(pvc.UID)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   pvc.Spec.AccessModes,
				StorageClassName:              StorageClass,
				PersistentVolumeReclaimPolicy: retain,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
				// One directory per claim object, not per claim name: a claim deleted and made
				// again (re-seeding a member) must get an empty volume, as a real provisioner's.
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(root, pvc.Namespace, pvc.Name+"-"+string(pvc.UID)),
				}},
			},
		}
		if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Provision volume", "claim", klog.KObj(pvc))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: provision, UpdateFunc: func(_, o any) { provision(o) }}); err != nil {
		return fmt.Errorf("watch claims: %w", err)
	}
	factory.Start(ctx.Done())
	return nil
}
