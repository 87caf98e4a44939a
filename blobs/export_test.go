package blobs

import "io"

// SetTestHooks makes d wrap the writer of each import's temporary data file
// with wrapTemp, and call fail at each step of Commit and Delete, failing
// the step with the error it returns. Either may be nil.
func SetTestHooks(d *Dir, wrapTemp func(io.Writer) io.Writer, fail func(step string) error) {
	d.hooks = hooks{wrapTemp: wrapTemp, fail: fail}
}

// CommitSteps are the step names Commit passes to the fail hook.
var CommitSteps = []string{"sync-data", "write-outboard", "sync-outboard", "rename-outboard", "rename-data", "sync-dir"}

// DeleteSteps are the step names Delete passes to the fail hook.
var DeleteSteps = []string{"delete-data", "sync-dir-data", "delete-outboard"}

// OpenObjectFile is openObjectFile: the open of an object's file once its
// Lstat said it is a regular file.
var OpenObjectFile = openObjectFile

// MaxHeld is maxHeld: how many objects a Dir keeps open.
const MaxHeld = maxHeld
