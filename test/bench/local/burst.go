package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

// burstInFlight is how many of a burst's creates are in flight at once, as in the reconcile
// benchmark.
const burstInFlight = 16

// burster creates a burst of clusters in one namespace in the background.
type burster struct {
	lc    *localcluster.Cluster
	mysql versioned.Interface
	ns    string
	// sent counts the clusters created so far.
	sent atomic.Int64
	done chan struct{}
	// err is the first failed create; read after done is closed.
	err error
}

// startBurst creates namespace ns and starts creating n clusters in it; it returns once half
// of them were created.
func startBurst(ctx context.Context, lc *localcluster.Cluster, mysql versioned.Interface, ns string, n int) (*burster, error) {
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := lc.CP.Kube.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	b := &burster{lc: lc, mysql: mysql, ns: ns, done: make(chan struct{})}
	go b.create(ctx, n)
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-b.done:
			return true, nil
		default:
			return b.sent.Load() >= int64(n/2), nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("burst: half of %d clusters not created: %w", n, err)
	}
	return b, nil
}

func (b *burster) create(ctx context.Context, n int) {
	defer close(b.done)
	clusters := b.mysql.MysqlopV1alpha1().MySQLClusters(b.ns)
	var (
		wg   sync.WaitGroup
		once sync.Once
		sem  = make(chan struct{}, burstInFlight)
	)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := clusters.Create(ctx, burstCluster(fmt.Sprintf("burst-%d", i)), metav1.CreateOptions{}); err != nil {
				once.Do(func() { b.err = fmt.Errorf("create cluster burst-%d: %w", i, err) })
				return
			}
			b.sent.Add(1)
		}()
	}
	wg.Wait()
}

// burstCluster is a three-member cluster (TLS on, the default) whose pods never start: no node
// matches its selector and its claims name a storage class that does not exist.
func burstCluster(name string) *v1alpha1.MySQLCluster {
	class := "bench-burst-none"
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.MySQLClusterSpec{Flavor: v1alpha1.FlavorMariaDB, Members: 3, Version: "10.11.6",
			NodeSelector: map[string]string{"mysqlop.io/bench": "nowhere"},
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}},
	}
}

// progress returns how many clusters were created and how many StatefulSets the operator made
// for them so far.
func (b *burster) progress(ctx context.Context) (sent, statefulSets int) {
	// From the API server's watch cache: a cheap read while it is busy.
	list, err := b.lc.CP.Kube.AppsV1().StatefulSets(b.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err == nil {
		statefulSets = len(list.Items)
	}
	return int(b.sent.Load()), statefulSets
}

// remove waits for the burst's creates, then deletes its namespace and waits until it is gone,
// so that the next run starts on an idle machine. It returns the burst's first error.
func (b *burster) remove(ctx context.Context) error {
	<-b.done
	ns := b.lc.CP.Kube.CoreV1().Namespaces()
	if err := ns.Delete(ctx, b.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", b.ns, err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ns.Get(ctx, b.ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s not gone: %w", b.ns, err)
	}
	return b.err
}
