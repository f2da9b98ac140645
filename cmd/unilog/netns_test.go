package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netnsLab is the network a soak's brokers run on when it can make
// network partitions: each broker in a Linux network namespace of its
// own, attached by a veth pair to a bridge in a hub namespace, which the
// test's own namespace (NATS, the clients) reaches by one more veth.
// Taking a node's link on the bridge down cuts it off from everything,
// NATS, its clients and its peers, as a pulled cable does: its
// connections stay open and go silent. It needs root and ip(8).
type netnsLab struct {
	t      *testing.T
	prefix string // of every namespace and link name, unique to the process
	subnet string // "10.a.b.": the host is .1, node i is .1i
}

// netnsUnavailable says why this machine cannot make a netnsLab, or "".
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "network namespaces need ip(8): " + err.Error()
	}
	return ""
}

// newNetnsLab makes the hub and n node namespaces; they go when the test
// ends. An error means the machine refused (no CAP_NET_ADMIN, say).
func newNetnsLab(t *testing.T, n int) (*netnsLab, error) {
	pid := os.Getpid() & 0xffff
	l := &netnsLab{t: t, prefix: fmt.Sprintf("ul%d", pid), subnet: fmt.Sprintf("10.%d.%d.", pid>>8, pid&0xff)}
	t.Cleanup(l.remove)
	hub := l.hub()
	steps := [][]string{
		{"netns", "add", hub},
		{"-n", hub, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", "br0", "type", "bridge"},
		{"-n", hub, "link", "set", "br0", "up"},
		{"link", "add", l.prefix + "h", "type", "veth", "peer", "name", l.port(0), "netns", hub},
		{"-n", hub, "link", "set", l.port(0), "master", "br0", "up"},
		{"addr", "add", l.subnet + "1/24", "dev", l.prefix + "h"},
		{"link", "set", l.prefix + "h", "up"},
	}
	for i := 1; i <= n; i++ {
		ns := l.ns(i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", l.port(i), "netns", hub},
			[]string{"-n", hub, "link", "set", l.port(i), "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", l.ip(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *netnsLab) hub() string       { return l.prefix + "hub" }
func (l *netnsLab) ns(i int) string   { return fmt.Sprintf("%sn%d", l.prefix, i) }
func (l *netnsLab) port(i int) string { return fmt.Sprintf("%sb%d", l.prefix, i) }

// hostIP is the test's own address on the lab's network.
func (l *netnsLab) hostIP() string { return l.subnet + "1" }

// ip is node i's address (1-based).
func (l *netnsLab) ip(i int) string { return fmt.Sprintf("%s1%d", l.subnet, i) }

// cut takes node i's link down: a partition of that node from all else.
func (l *netnsLab) cut(i int) {
	l.t.Helper()
	if err := ipCmd("-n", l.hub(), "link", "set", l.port(i), "down"); err != nil {
		l.t.Fatal(err)
	}
}

// heal brings node i's link back.
func (l *netnsLab) heal(i int) {
	l.t.Helper()
	if err := ipCmd("-n", l.hub(), "link", "set", l.port(i), "up"); err != nil {
		l.t.Fatal(err)
	}
}

// remove deletes the namespaces, and with them every link of the lab.
func (l *netnsLab) remove() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, l.prefix) {
			ipCmd("netns", "del", name)
		}
	}
	ipCmd("link", "del", l.prefix+"h")
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
