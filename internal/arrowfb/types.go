package arrowfb

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// The Arrow types of Schema.fbs's Type union, built from their tables.

// dictionary decodes a field's DictionaryEncoding (slot 4 of the field):
// indexType (slot 1, an Int table), isOrdered (slot 2).
func (d *decoder) dictionary(ft int) (*arrow.DictionaryType, error) {
	de, err := d.Ref(ft, 4)
	if err != nil || de == 0 {
		return nil, err
	}
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32}
	if it, err := d.Ref(de, 1); err != nil {
		return nil, err
	} else if it != 0 {
		t, err := d.intType(it)
		if err != nil {
			return nil, err
		}
		if !arrow.IsInteger(t.ID()) {
			return nil, fmt.Errorf("%w: a dictionary index of type %s", ErrMalformed, t)
		}
		dt.IndexType = t
	}
	ordered, err := d.scalar(de, 2, 1)
	if err != nil {
		return nil, err
	}
	dt.Ordered = ordered != 0
	return dt, nil
}

// intType decodes an Int table: bitWidth (slot 0), is_signed (slot 1).
func (d *decoder) intType(t int) (arrow.DataType, error) {
	width, err := d.scalar(t, 0, 4)
	if err != nil {
		return nil, err
	}
	signed, err := d.scalar(t, 1, 1)
	if err != nil {
		return nil, err
	}
	types := map[int64][2]arrow.DataType{
		8:  {arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int8},
		16: {arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int16},
		32: {arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int32},
		64: {arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64},
	}
	pair, ok := types[width]
	if !ok {
		return nil, fmt.Errorf("%w: an integer of %d bits", ErrMalformed, width)
	}
	if signed != 0 {
		return pair[1], nil
	}
	return pair[0], nil
}

// timeUnit maps Schema.fbs TimeUnit to arrow's.
func timeUnit(u int64) (arrow.TimeUnit, error) {
	switch u {
	case 0:
		return arrow.Second, nil
	case 1:
		return arrow.Millisecond, nil
	case 2:
		return arrow.Microsecond, nil
	case 3:
		return arrow.Nanosecond, nil
	}
	return 0, fmt.Errorf("%w: time unit %d", ErrMalformed, u)
}

// dataType builds the type of kind from its table t and the field's
// children, or returns nil for a kind the package does not build.
func (d *decoder) dataType(kind Kind, t int, children []Field) (arrow.DataType, error) {
	needTable := func() error {
		if t == 0 {
			return fmt.Errorf("%w: a type of kind %d without its table", ErrMalformed, kind)
		}
		return nil
	}
	childTypes := func(n int) ([]arrow.Field, bool) {
		if n >= 0 && len(children) != n {
			return nil, false
		}
		out := make([]arrow.Field, len(children))
		for i, c := range children {
			if c.Type == nil {
				return nil, false
			}
			typ := c.Type
			if c.Dictionary != nil {
				typ = &arrow.DictionaryType{IndexType: c.Dictionary.IndexType, ValueType: c.Type, Ordered: c.Dictionary.Ordered}
			}
			out[i] = arrow.Field{Name: c.Name, Type: typ, Nullable: c.Nullable, Metadata: c.Metadata}
		}
		return out, true
	}
	switch kind {
	case KindNull:
		return arrow.Null, nil
	case KindBool:
		return arrow.FixedWidthTypes.Boolean, nil
	case KindBinary:
		return arrow.BinaryTypes.Binary, nil
	case KindUtf8:
		return arrow.BinaryTypes.String, nil
	case KindLargeBinary:
		return arrow.BinaryTypes.LargeBinary, nil
	case KindLargeUtf8:
		return arrow.BinaryTypes.LargeString, nil
	case KindInt:
		if err := needTable(); err != nil {
			return nil, err
		}
		return d.intType(t)
	case KindFloatingPoint:
		if err := needTable(); err != nil {
			return nil, err
		}
		p, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		switch p {
		case 0:
			return arrow.FixedWidthTypes.Float16, nil
		case 1:
			return arrow.PrimitiveTypes.Float32, nil
		case 2:
			return arrow.PrimitiveTypes.Float64, nil
		}
		return nil, fmt.Errorf("%w: floating point precision %d", ErrMalformed, p)
	case KindDecimal:
		if err := needTable(); err != nil {
			return nil, err
		}
		prec, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		scale, err := d.scalar(t, 1, 4)
		if err != nil {
			return nil, err
		}
		width, err := d.scalarOr(t, 2, 4, 128)
		if err != nil {
			return nil, err
		}
		maxPrec := map[int64]int64{32: 9, 64: 18, 128: 38, 256: 76}[width]
		if prec < 1 || prec > maxPrec {
			return nil, fmt.Errorf("%w: a decimal of %d bits and precision %d", ErrMalformed, width, prec)
		}
		var dt arrow.DataType
		switch width {
		case 32:
			dt = &arrow.Decimal32Type{Precision: int32(prec), Scale: int32(scale)}
		case 64:
			dt = &arrow.Decimal64Type{Precision: int32(prec), Scale: int32(scale)}
		case 128:
			dt = &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}
		case 256:
			dt = &arrow.Decimal256Type{Precision: int32(prec), Scale: int32(scale)}
		default:
			return nil, fmt.Errorf("%w: a decimal of %d bits", ErrMalformed, width)
		}
		return dt, nil
	case KindDate:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		switch u {
		case 0:
			return arrow.FixedWidthTypes.Date32, nil
		case 1:
			return arrow.FixedWidthTypes.Date64, nil
		}
		return nil, fmt.Errorf("%w: date unit %d", ErrMalformed, u)
	case KindTime:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		width, err := d.scalarOr(t, 1, 4, 32)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		switch {
		case width == 32 && (unit == arrow.Second || unit == arrow.Millisecond):
			return &arrow.Time32Type{Unit: unit}, nil
		case width == 64 && (unit == arrow.Microsecond || unit == arrow.Nanosecond):
			return &arrow.Time64Type{Unit: unit}, nil
		}
		return nil, fmt.Errorf("%w: a time of %d bits in unit %s", ErrMalformed, width, unit)
	case KindTimestamp:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		tz, err := d.str(t, 1)
		if err != nil {
			return nil, err
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case KindDuration:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		return &arrow.DurationType{Unit: unit}, nil
	case KindInterval:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		switch u {
		case 0:
			return arrow.FixedWidthTypes.MonthInterval, nil
		case 1:
			return arrow.FixedWidthTypes.DayTimeInterval, nil
		case 2:
			return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
		}
		return nil, fmt.Errorf("%w: interval unit %d", ErrMalformed, u)
	case KindFixedSizeBinary:
		if err := needTable(); err != nil {
			return nil, err
		}
		w, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		if w < 0 {
			return nil, fmt.Errorf("%w: a fixed-size binary of width %d", ErrMalformed, w)
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: int(w)}, nil
	case KindList, KindLargeList:
		fs, ok := childTypes(1)
		if !ok {
			return nil, nil
		}
		if kind == KindLargeList {
			return arrow.LargeListOfField(fs[0]), nil
		}
		return arrow.ListOfField(fs[0]), nil
	case KindFixedSizeList:
		if err := needTable(); err != nil {
			return nil, err
		}
		n, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		fs, ok := childTypes(1)
		if !ok {
			return nil, nil
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: a fixed-size list of %d", ErrMalformed, n)
		}
		return arrow.FixedSizeListOfField(int32(n), fs[0]), nil
	case KindStruct:
		fs, ok := childTypes(-1)
		if !ok {
			return nil, nil
		}
		return arrow.StructOf(fs...), nil
	case KindMap:
		if err := needTable(); err != nil {
			return nil, err
		}
		sorted, err := d.scalar(t, 0, 1)
		if err != nil {
			return nil, err
		}
		// A map's one child is a struct of a key and a value.
		if len(children) != 1 || children[0].Kind != KindStruct || len(children[0].Children) != 2 {
			return nil, nil
		}
		kv := children[0].Children
		if kv[0].Type == nil || kv[1].Type == nil || kv[0].Dictionary != nil || kv[1].Dictionary != nil {
			return nil, nil
		}
		m := arrow.MapOfFields(
			arrow.Field{Name: kv[0].Name, Type: kv[0].Type, Metadata: kv[0].Metadata},
			arrow.Field{Name: kv[1].Name, Type: kv[1].Type, Nullable: kv[1].Nullable, Metadata: kv[1].Metadata})
		m.KeysSorted = sorted != 0
		return m, nil
	}
	return nil, nil
}
