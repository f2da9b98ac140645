package bench

import "testing"

func TestReplaceSection(t *testing.T) {
	const storage = "# Storage\n\nold table\n## Results\n\nrows\n"
	const hand = "# Produce latency\n\nwritten by hand\n```\n# a shell comment, not a heading\n```\nmore\n"
	const e2e = "# End to end\n\nold runs\n"
	for _, tc := range []struct {
		name, doc, block, want string
	}{
		{"first in the file, hand section kept", storage + "\n" + hand,
			"# Storage\n\nnew table\n", "# Storage\n\nnew table\n\n" + hand},
		{"between hand sections", hand + "\n" + e2e + "\n" + "# Soak\n\nfigures\n",
			"# End to end\n\nnew runs\n", hand + "\n# End to end\n\nnew runs\n\n# Soak\n\nfigures\n"},
		{"last in the file", hand + "\n" + e2e, "# End to end\n\nnew runs\n", hand + "\n# End to end\n\nnew runs\n"},
		{"missing: appended", hand, "# End to end\n\nruns\n", hand + "\n# End to end\n\nruns\n"},
		{"empty file", "", "# Storage\n\nt\n", "# Storage\n\nt\n"},
		{"a heading in a code block does not end the section", "# Storage\n\n```\n# Storage\n```\nold\n# Soak\n",
			"# Storage\n\nnew\n", "# Storage\n\nnew\n\n# Soak\n"},
		{"a lower-level heading stays inside", "# A\n\n## B\n\nb\n# C\n", "# A\n\nnew\n", "# A\n\nnew\n\n# C\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(replaceSection([]byte(tc.doc), []byte(tc.block))); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
