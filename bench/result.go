package bench

// Result is one run: one layout, partition count and flush policy. Rates
// are in MB/s of 10^6 bytes. Bytes counts message payloads (MBPerS is their
// rate); LogBytes counts the encoded records actually stored (LogMBPerS),
// which is what the disk has to write, so FractionOfDisk is LogMBPerS over
// DiskMBPerS, the raw sequential bandwidth measured before the runs; a
// sustained run's is a probe of its own size right before it.
type Result struct {
	Kind        string `json:"kind"`  // KindSweep, KindSustained or KindLimit
	Trial       int    `json:"trial"` // 1..Config.Trials
	Layout      string `json:"layout"`
	Partitions  int    `json:"partitions"`
	MessageSize int    `json:"message_size"`
	Flush       string `json:"flush"`
	Producers   int    `json:"producers"`
	Batch       int    `json:"batch"`
	Keys        string `json:"keys"`

	Records        int64   `json:"records"`
	Bytes          int64   `json:"bytes"`
	LogBytes       int64   `json:"log_bytes"`
	Seconds        float64 `json:"seconds"`
	MBPerS         float64 `json:"mb_per_s"`
	RecordsPerS    float64 `json:"records_per_s"`
	LogMBPerS      float64 `json:"log_mb_per_s"`
	DiskMBPerS     float64 `json:"disk_mb_per_s"`
	DiskNote       string  `json:"disk_note,omitempty"`
	FractionOfDisk float64 `json:"fraction_of_disk"`
	P50US          float64 `json:"p50_us"`
	P99US          float64 `json:"p99_us"`
	P999US         float64 `json:"p999_us"`

	OpenFiles   int   `json:"open_files"`
	MapAreas    int   `json:"map_areas"`
	DirMapAreas int   `json:"dir_map_areas"`
	MappedBytes int64 `json:"mapped_bytes"`

	Read *ReadResult `json:"read,omitempty"`

	Note string `json:"note,omitempty"` // e.g. the run reached the time limit

	Error       string `json:"error,omitempty"`
	ErrorDetail string `json:"error_detail,omitempty"`
}

// ReadResult is the read-back after a write run: the layout is closed, the
// page cache dropped, the layout reopened, then one partition is read, the
// cache dropped again, and every partition is read in partition order.
type ReadResult struct {
	Cold          bool    `json:"cold"`
	Note          string  `json:"note,omitempty"`
	ReopenSeconds float64 `json:"reopen_seconds"`
	OneRecords    int64   `json:"one_records"`
	OneSeconds    float64 `json:"one_seconds"`
	OneMBPerS     float64 `json:"one_mb_per_s"`
	AllRecords    int64   `json:"all_records"`
	AllSeconds    float64 `json:"all_seconds"`
	AllMBPerS     float64 `json:"all_mb_per_s"`
}
