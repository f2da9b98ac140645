package consumequeue

import "github.com/unilog/unilog/internal/fileops"

// FileOps is every file-system call of the store that decides what
// survives a crash or a full disk: the queues make all the seam's calls
// (fallocate and msync for their mapped files, fdatasync, rename and the
// directory syncs of the journal and of promotion). Options.FS is
// fileops.OS unless a test injects failures or records durability
// (fileopstest), directly or through store.Options.FS.
type FileOps = fileops.Ops
