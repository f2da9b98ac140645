// Package console is the web console served under /ui on a broker's admin
// port: the cluster, its topics and partitions, recent records, consumer
// groups and their lag, and live charts of the broker's own metrics.
//
// # Design
//
// The console owns the small interfaces it reads through (Source) and
// writes through (Admin); it never touches storage. The broker's command
// implements them with a Kafka client and the control plane, so a page
// shows what `unilog topic describe`, `unilog group describe` and
// `unilog cluster status` print, and on a cluster every partition is read
// through its leader.
//
// The browser talks to JSON endpoints under /ui/api/. Every list is paged
// and searchable on the server (Page), and a page asks for the figures of
// the items it shows in one call to the Source (one request per broker, not
// one per partition), so a 50,000-partition topic costs what one page of
// it costs.
//
// Charts come from the broker's Prometheus registry: a sampler gathers it
// every SampleInterval into a ring of History points, so a page opened
// late still draws the last minutes, and the group lag over time is the
// unilog_group_lag_records gauge kept the same way.
//
// The front end is plain HTML, one JavaScript file and a vendored chart
// library (uPlot, MIT, assets/uplot), embedded in the binary: nothing is
// built and nothing is fetched from elsewhere.
//
// Writes (create a topic, add partitions, reset a group's offsets, delete
// a topic or group) are refused with 403 unless the console was built
// with Options.Write. They need POST or DELETE with a JSON body and the
// X-Unilog-Console header, which a cross-site form cannot send, and the
// page asks for a confirmation first. The admin port's TLS and
// client-certificate rules wrap the whole console like any other path.
package console
