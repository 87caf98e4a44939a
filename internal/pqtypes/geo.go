package pqtypes

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// GeoName is the Arrow extension name of a geospatial column: GeoArrow's
// well-known-binary encoding, which is what Parquet's GEOMETRY and
// GEOGRAPHY logical types hold.
const GeoName = "geoarrow.wkb"

// GeoType is the Arrow type of a column of Parquet's GEOMETRY or GEOGRAPHY
// logical type: its binary storage (WKB), with the logical type's
// coordinate reference system and, for a geography, its edge
// interpolation, as GeoArrow metadata ({"crs": ..., "edges": ...}). Writing
// it through pqarrow writes the logical type back (pqarrow's
// ExtensionCustomParquetType), so that a round trip keeps the column a
// GEOMETRY or GEOGRAPHY, as DuckDB reads it. The type is not registered:
// the package changes no global state.
type GeoType struct {
	arrow.ExtensionBase
	geography bool
	crs       string // "" when the logical type sets none
	edges     string // a geography's algorithm, "" when unset
}

// NewGeoType returns the GeoType of a Parquet GEOMETRY or GEOGRAPHY logical
// type over storage (binary or large binary), or nil for another logical
// type.
func NewGeoType(lt schema.LogicalType, storage arrow.DataType) *GeoType {
	switch t := lt.(type) {
	case schema.GeometryLogicalType:
		return &GeoType{ExtensionBase: arrow.ExtensionBase{Storage: storage}, crs: t.Crs}
	case schema.GeographyLogicalType:
		return &GeoType{ExtensionBase: arrow.ExtensionBase{Storage: storage}, geography: true, crs: t.Crs, edges: string(t.Algorithm)}
	}
	return nil
}

// GeoArray is an array of GeoType.
type GeoArray struct{ array.ExtensionArrayBase }

func (*GeoType) ArrayType() reflect.Type { return reflect.TypeOf(GeoArray{}) }
func (*GeoType) ExtensionName() string   { return GeoName }

// Geography reports whether the type is Parquet's GEOGRAPHY (edges
// interpolated on the sphere or spheroid), not GEOMETRY (planar).
func (t *GeoType) Geography() bool { return t.geography }

func (t *GeoType) String() string {
	kind := "geometry"
	if t.geography {
		kind = "geography"
	}
	return fmt.Sprintf("extension<%s %s crs=%q>", GeoName, kind, t.crs)
}

type geoMeta struct {
	CRS   *string `json:"crs,omitempty"`
	Edges string  `json:"edges,omitempty"`
}

// Serialize returns the GeoArrow metadata. A geography without an explicit
// algorithm is "spherical", Parquet's default.
func (t *GeoType) Serialize() string {
	var m geoMeta
	if t.crs != "" {
		crs := t.crs
		m.CRS = &crs
	}
	if t.geography {
		m.Edges = t.edges
		if m.Edges == "" {
			m.Edges = string(schema.GeographyEdgeSpherical)
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Deserialize parses GeoArrow metadata. Edges other than planar make a
// geography.
func (*GeoType) Deserialize(storage arrow.DataType, data string) (arrow.ExtensionType, error) {
	if id := storage.ID(); id != arrow.BINARY && id != arrow.LARGE_BINARY {
		return nil, fmt.Errorf("%s over %s", GeoName, storage)
	}
	var m struct {
		CRS   json.RawMessage `json:"crs"`
		Edges string          `json:"edges"`
	}
	if data != "" {
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return nil, fmt.Errorf("%s metadata: %w", GeoName, err)
		}
	}
	t := &GeoType{ExtensionBase: arrow.ExtensionBase{Storage: storage}}
	var s string
	if len(m.CRS) > 0 && json.Unmarshal(m.CRS, &s) == nil {
		t.crs = s
	} else if len(m.CRS) > 0 && string(m.CRS) != "null" {
		t.crs = string(m.CRS) // PROJJSON, as an object
	}
	if m.Edges != "" && m.Edges != "planar" {
		t.geography = true
		if m.Edges != string(schema.GeographyEdgeSpherical) {
			t.edges = m.Edges
		}
	}
	return t, nil
}

func (t *GeoType) ExtensionEquals(o arrow.ExtensionType) bool {
	u, ok := o.(*GeoType)
	return ok && t.geography == u.geography && t.crs == u.crs && t.edges == u.edges && arrow.TypeEqual(t.Storage, u.Storage)
}

// ParquetLogicalType is the logical type pqarrow writes for the column.
func (t *GeoType) ParquetLogicalType() schema.LogicalType {
	if t.geography {
		return schema.GeographyLogicalType{Crs: t.crs, Algorithm: schema.GeographyEdgeInterpolationAlgorithm(t.edges)}
	}
	return schema.GeometryLogicalType{Crs: t.crs}
}
