package auth

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// aclMagic and aclVersion open every ACL file (format in doc.go).
const (
	aclMagic   = "unilog-acl"
	aclVersion = 1
)

// Operation is what an ACL rule allows on the resources it names.
type Operation int

const (
	// Produce allows Produce to matching topics (and InitProducerId).
	Produce Operation = iota + 1
	// Consume allows Fetch and ListOffsets on matching topics, and
	// committing, fetching and deleting their offsets in a group the
	// principal may use.
	Consume
	// Group allows every consumer group API on matching groups: finding
	// the coordinator, joining, committing to, listing, describing and
	// deleting them.
	Group
	// Admin allows creating, deleting and growing matching topics.
	Admin
	// Transaction allows the transaction APIs (FindCoordinator,
	// InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
	// TxnOffsetCommit, EndTxn, DescribeTransactions, ListTransactions)
	// and a transactional Produce on matching transactional ids; the
	// topics and groups they name need their own permissions too.
	Transaction
	// Cluster is Kafka's CLUSTER_ACTION on the cluster, what brokers do
	// to each other: writing transaction markers (WriteTxnMarkers) and
	// fetching any topic's records to move a partition. Rules name the
	// pattern "*". The nodes' own login (InterBrokerUser) holds it
	// without a rule; one is needed for principals that are node
	// certificates, on listeners with mutual TLS and no SASL.
	Cluster
)

var opNames = map[string]Operation{"produce": Produce, "consume": Consume, "group": Group, "admin": Admin, "transaction": Transaction, "cluster": Cluster}

func (o Operation) String() string {
	for n, op := range opNames {
		if op == o {
			return n
		}
	}
	return "operation(" + strconv.Itoa(int(o)) + ")"
}

// AnyPrincipal in the principal column matches every principal,
// ANONYMOUS included.
const AnyPrincipal = "*"

type rule struct {
	principal string
	op        Operation
	patterns  []string
}

// ACL is a parsed ACL file: an allow list. Anything no rule allows is denied.
type ACL struct {
	rules []rule
}

// Allow reports whether principal may do op on the topic or group name.
func (a *ACL) Allow(principal string, op Operation, name string) bool {
	for _, r := range a.rules {
		if r.op != op || (r.principal != AnyPrincipal && r.principal != principal) {
			continue
		}
		for _, p := range r.patterns {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// ParseACL decodes an ACL file.
func ParseACL(data []byte) (*ACL, error) {
	a := &ACL{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line, header := 0, false
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if !header {
			if len(f) != 2 || f[0] != aclMagic {
				return nil, fmt.Errorf("%w: ACL line %d: the first line must be %q", ErrFormat, line, fmt.Sprintf("%s %d", aclMagic, aclVersion))
			}
			if f[1] != strconv.Itoa(aclVersion) {
				return nil, fmt.Errorf("%w: ACL file version %s, this build reads %d", ErrFormat, f[1], aclVersion)
			}
			header = true
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("%w: ACL line %d: want PRINCIPAL OPERATION PATTERN...", ErrFormat, line)
		}
		op, ok := opNames[f[1]]
		if !ok {
			return nil, fmt.Errorf("%w: ACL line %d: operation %q: want produce, consume, group, transaction or admin", ErrFormat, line, f[1])
		}
		for _, p := range f[2:] {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%w: ACL line %d: pattern %q: %v", ErrFormat, line, p, err)
			}
		}
		a.rules = append(a.rules, rule{principal: f[0], op: op, patterns: f[2:]})
	}
	if !header {
		return nil, fmt.Errorf("%w: ACL file is empty; an empty allow list would deny everything", ErrFormat)
	}
	return a, nil
}

// LoadACL reads and parses an ACL file.
func LoadACL(file string) (*ACL, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("auth: read ACL %s: %w", file, err)
	}
	a, err := ParseACL(data)
	if err != nil {
		return nil, fmt.Errorf("auth: ACL %s: %w", file, err)
	}
	return a, nil
}

// ACLRecheck is how often an ACLFile looks at its file: authorization
// runs on every request, a stat per request would not.
const ACLRecheck = time.Second

// ACLFile is an ACL over a file that rereads it when it changes (checked
// at most every ACLRecheck), so a grant or revocation takes effect without
// a restart. A file that stops parsing keeps the last good rules rather
// than denying everything, and tells OnReloadError.
type ACLFile struct {
	w *fileWatch[ACL]
	// OnReloadError, when set, hears of each failed reload.
	OnReloadError func(error)
}

// OpenACLFile loads path, which must exist and parse.
func OpenACLFile(path string) (*ACLFile, error) {
	w, err := watchFile(path, ACLRecheck, LoadACL)
	if err != nil {
		return nil, err
	}
	return &ACLFile{w: w}, nil
}

// Allow reports whether principal may do op on the topic or group name
// under the file's current rules.
func (f *ACLFile) Allow(principal string, op Operation, name string) bool {
	return f.w.current(f.OnReloadError).Allow(principal, op, name)
}
