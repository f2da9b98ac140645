package console

import (
	"net/url"
	"strconv"
	"strings"
)

// DefaultPageSize and MaxPageSize bound every list the API returns.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// Page is a window on a list, from the query string: offset, limit, and q,
// a case-insensitive substring that items must contain.
type Page struct {
	Offset int
	Limit  int
	Query  string
}

func parsePage(v url.Values) Page {
	p := Page{Limit: DefaultPageSize, Query: strings.ToLower(strings.TrimSpace(v.Get("q")))}
	if n, err := strconv.Atoi(v.Get("offset")); err == nil && n > 0 {
		p.Offset = n
	}
	if n, err := strconv.Atoi(v.Get("limit")); err == nil && n > 0 {
		p.Limit = min(n, MaxPageSize)
	}
	return p
}

// apply filters items by key and returns the window and how many matched.
func apply[T any](p Page, items []T, key func(T) string) (window []T, total int) {
	matched := items
	if p.Query != "" {
		matched = nil
		for _, it := range items {
			if strings.Contains(strings.ToLower(key(it)), p.Query) {
				matched = append(matched, it)
			}
		}
	}
	total = len(matched)
	if p.Offset >= total {
		return []T{}, total // JSON [] rather than null
	}
	return matched[p.Offset:min(total, p.Offset+p.Limit)], total
}
