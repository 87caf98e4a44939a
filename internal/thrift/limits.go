package thrift

// Limits bounds the work Decode does. A zero or negative field means its
// default.
type Limits struct {
	// MaxDepth is the deepest nesting of structs, lists, sets and maps: the
	// top-level struct is at depth 1, a struct in one of its fields at
	// depth 2. Parquet's FileMetaData nests about 9 deep.
	MaxDepth int
	// MaxNodes is the largest number of values (fields, and list, set and
	// map elements, keys and values) in one decoded tree. Each costs 72 to
	// 104 bytes of memory (on 64-bit platforms).
	MaxNodes int
}

// Defaults for Limits.
const (
	DefaultMaxDepth = 32
	DefaultMaxNodes = 1 << 22
)

// DefaultLimits returns the limits that Decode uses for zero fields:
// MaxDepth 32 and MaxNodes 1<<22 (about 4 million values, which bounds the
// tree at a few hundred MiB).
func DefaultLimits() Limits {
	return Limits{MaxDepth: DefaultMaxDepth, MaxNodes: DefaultMaxNodes}
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	return l
}
