package backup

import (
	"fmt"
	"math"
	"slices"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// pickMember chooses the pod that takes a backup: the requested one if it is a ready member;
// otherwise the ready replica with the least lag (a backup should not load the primary), and
// the primary only when no replica is ready. An empty result comes with the reason.
func pickMember(c *v1alpha1.MySQLCluster, requested string) (string, string) {
	ready := map[string]v1alpha1.InstanceStatus{}
	for _, in := range c.Status.Instances {
		if in.Ready {
			ready[in.Name] = in
		}
	}
	if requested != "" {
		if _, ok := ready[requested]; !ok {
			return "", fmt.Sprintf("requested member %s is not a ready member of MySQLCluster %s", requested, c.Name)
		}
		return requested, ""
	}
	var replicas []v1alpha1.InstanceStatus
	for _, in := range ready {
		if in.Name != c.Status.Primary && in.Role == "replica" {
			replicas = append(replicas, in)
		}
	}
	lag := func(in v1alpha1.InstanceStatus) int64 {
		if in.LagSeconds == nil {
			return math.MaxInt64
		}
		return *in.LagSeconds
	}
	slices.SortFunc(replicas, func(a, b v1alpha1.InstanceStatus) int {
		if la, lb := lag(a), lag(b); la != lb {
			if la < lb {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	if len(replicas) > 0 {
		return replicas[0].Name, ""
	}
	if _, ok := ready[c.Status.Primary]; ok && c.Status.Primary != "" {
		return c.Status.Primary, ""
	}
	return "", fmt.Sprintf("MySQLCluster %s has no ready member", c.Name)
}
