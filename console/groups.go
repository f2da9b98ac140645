package console

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// groupRow is a group on the groups page.
type groupRow struct {
	GroupSummary
	Members  int    `json:"members"`
	TotalLag int64  `json:"total_lag"`
	Err      string `json:"error,omitempty"`
}

func (c *Console) serveGroups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	groups, err := c.o.Source.Groups(ctx)
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	slices.SortFunc(groups, func(a, b GroupSummary) int { return strings.Compare(a.Name, b.Name) })
	page, total := apply(parsePage(r.URL.Query()), groups, func(g GroupSummary) string { return g.Name })
	names := make([]string, len(page))
	for i, g := range page {
		names[i] = g.Name
	}
	described, err := c.o.Source.Describe(ctx, names)
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	byName := map[string]Group{}
	for _, d := range described {
		byName[d.Name] = d
	}
	rows := make([]groupRow, len(page))
	for i, g := range page {
		d := byName[g.Name]
		rows[i] = groupRow{GroupSummary: g, Members: len(d.Members), TotalLag: d.TotalLag, Err: d.Err}
		if d.State != "" {
			rows[i].State = d.State
		}
	}
	c.reply(w, r, list[groupRow]{total, rows}, nil)
}

// groupPage is one group: its members, a page of its partitions' lag
// (q matches "topic/partition"), and its total lag over the history.
type groupPage struct {
	Name     string   `json:"name"`
	State    string   `json:"state"`
	Members  []Member `json:"members"`
	TotalLag int64    `json:"total_lag"`
	list[PartitionLag]
	LagT []int64    `json:"lag_t"`
	LagV []*float64 `json:"lag_v"`
	// LagTracked is false for a group beyond MaxLagGroups: no history.
	LagTracked bool `json:"lag_tracked"`
}

func (c *Console) serveGroup(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	name := r.PathValue("group")
	described, err := c.o.Source.Describe(ctx, []string{name})
	if err == nil && len(described) != 1 {
		err = fmt.Errorf("group %q: missing from the answer", name)
	}
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	g := described[0]
	if g.Err != "" {
		c.reply(w, r, nil, fmt.Errorf("group %q: %s", name, g.Err))
		return
	}
	if g.State == "Dead" {
		c.reply(w, r, nil, &httpError{http.StatusNotFound, fmt.Errorf("no group %q", name)})
		return
	}
	rows, total := apply(parsePage(r.URL.Query()), g.Lag, func(l PartitionLag) string { return fmt.Sprintf("%s/%d", l.Topic, l.Partition) })
	if g.Members == nil {
		g.Members = []Member{}
	}
	t, v, tracked := c.hist.groupLag(name)
	c.reply(w, r, groupPage{Name: g.Name, State: g.State, Members: g.Members, TotalLag: g.TotalLag,
		list: list[PartitionLag]{total, rows}, LagT: t, LagV: v, LagTracked: tracked}, nil)
}
