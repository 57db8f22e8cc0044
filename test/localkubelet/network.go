package localkubelet

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ip runs ip(8) with args.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Gateway returns the first address of cidr: the bridge's address, by which pods reach the
// host (and so the apiserver).
func Gateway(cidr string) (net.IP, *net.IPNet, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, nil, fmt.Errorf("parse pod CIDR %q: %w", cidr, err)
	}
	v4 := n.IP.To4()
	if v4 == nil {
		return nil, nil, fmt.Errorf("pod CIDR %q is not IPv4", cidr)
	}
	gw := make(net.IP, 4)
	copy(gw, v4)
	gw[3]++
	return gw, n, nil
}

// EnsureBridge creates the bridge with the gateway address of cidr, unless it exists. The
// control plane binds to that address, so it is created before the control plane starts.
func EnsureBridge(name, cidr string) error {
	gw, n, err := Gateway(cidr)
	if err != nil {
		return err
	}
	if _, err := net.InterfaceByName(name); err == nil {
		return nil
	}
	ones, _ := n.Mask.Size()
	if err := ip("link", "add", name, "type", "bridge"); err != nil {
		return err
	}
	if err := ip("addr", "add", fmt.Sprintf("%s/%d", gw, ones), "dev", name); err != nil {
		return err
	}
	return ip("link", "set", name, "up")
}

// RemoveBridge deletes the bridge if it exists.
func RemoveBridge(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	return ip("link", "del", name)
}

// ipam hands out pod addresses of one range, from .10 up.
type ipam struct {
	mu   sync.Mutex
	net  *net.IPNet
	used map[string]bool
	next uint32
}

func newIPAM(n *net.IPNet) *ipam { return &ipam{net: n, used: map[string]bool{}, next: 10} }

func (a *ipam) allocate() (net.IP, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	base := ipToUint(n4(a.net.IP))
	ones, bits := a.net.Mask.Size()
	size := uint32(1) << uint(bits-ones)
	for i := uint32(0); i < size; i++ {
		off := (a.next + i) % size
		if off < 10 || off == size-1 {
			continue
		}
		addr := uintToIP(base + off)
		if !a.used[addr.String()] {
			a.used[addr.String()] = true
			a.next = off + 1
			return addr, nil
		}
	}
	return nil, fmt.Errorf("pod range %s is exhausted", a.net)
}

func (a *ipam) release(addr net.IP) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.used, addr.String())
}

func n4(ip net.IP) net.IP { return ip.To4() }

func ipToUint(ip net.IP) uint32 {
	return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
}

func uintToIP(v uint32) net.IP { return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4() }

// podNetwork is one pod's network namespace and veth pair.
type podNetwork struct {
	// Namespace is the netns name (ip netns), HostLink the host end of the veth pair.
	Namespace, HostLink string
	IP                  net.IP
}

// names gives the netns and host link names of a pod: short (a link name has at most 15
// bytes) and prefixed by the runtime's instance name so that its cleanup finds them.
func names(instance, uid string) (netns, link string) {
	short := strings.ReplaceAll(uid, "-", "")
	if len(short) > 8 {
		short = short[:8]
	}
	return "mlk" + instance + "-" + short, "mk" + instance + short
}

// Netns is the network namespace (ip netns) of the pod with uid, for tests that cut some of a
// pod's routes.
func Netns(instance, uid string) string {
	ns, _ := names(instance, uid)
	return ns
}

// HostLink is the host end of the veth pair of the pod with uid, for tests that cut a pod's
// network (`ip link set <link> down`).
func HostLink(instance, uid string) string {
	_, link := names(instance, uid)
	return link
}

func setupPodNetwork(instance, uid, bridge string, addr, gw net.IP, n *net.IPNet) (*podNetwork, error) {
	ns, link := names(instance, uid)
	pn := &podNetwork{Namespace: ns, HostLink: link, IP: addr}
	ones, _ := n.Mask.Size()
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", link, "master", bridge, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s/%d", addr, ones), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", gw.String()},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			pn.teardown()
			return nil, err
		}
	}
	return pn, nil
}

// teardown deletes the namespace; the veth pair goes with it.
func (pn *podNetwork) teardown() {
	_ = ip("netns", "del", pn.Namespace)
	if _, err := net.InterfaceByName(pn.HostLink); err == nil {
		_ = ip("link", "del", pn.HostLink)
	}
}

// Sweep removes what a runtime instance left behind when it died without cleaning up: the
// processes in its network namespaces, the namespaces, their host links and /etc/netns files.
func Sweep(instance string) error {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	prefix := "mlk" + instance + "-"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		killNamespace(f[0])
		_ = ip("netns", "del", f[0])
		removeEtcNetns(f[0])
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "mk"+instance) {
			_ = ip("link", "del", i.Name)
		}
	}
	// Files of namespaces that are already gone, then the directory ip netns exec reads
	// them from, once empty.
	etc, _ := filepath.Glob(filepath.Join("/etc/netns", prefix+"*"))
	for _, d := range etc {
		_ = os.RemoveAll(d)
	}
	_ = os.Remove("/etc/netns")
	return nil
}

// killNamespace SIGKILLs every process in netns and waits (up to 10 s) until none is left:
// a process still alive holds its /etc/hosts bind mount, which keeps /etc/netns/<ns> busy.
func killNamespace(netns string) {
	for i := 0; i < 100; i++ {
		out, err := exec.Command("ip", "netns", "pids", netns).Output()
		pids := strings.Fields(string(out))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
