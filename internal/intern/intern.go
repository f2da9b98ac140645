// Package intern shares one string among the equal names a decoder reads:
// a file that names the same topic for each of a million partitions
// otherwise costs a million allocations, kept as long as what was decoded.
package intern

// Strings holds one string per distinct value; the zero value is not
// usable, make one with New. It is not safe for concurrent use: each
// decode makes its own.
type Strings map[string]string

// New returns an empty table.
func New() Strings { return make(Strings) }

// Get returns b as a string, the one the table already holds if any.
func (s Strings) Get(b []byte) string {
	if v, ok := s[string(b)]; ok {
		return v
	}
	v := string(b)
	s[v] = v
	return v
}
