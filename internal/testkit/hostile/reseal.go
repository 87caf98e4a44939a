package hostile

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// Seal re-seals the object under dek, keeping the pad entry as it is.
func (o *Object) Seal(dek pme.DEK) ([]byte, error) { return o.seal(dek, false) }

// SealPadded re-seals the object under dek and sets its pad entry so that
// the object reaches its Padmé size again, as the writer does (Section
// 11.8). The footer must have exactly one pad entry.
func (o *Object) SealPadded(dek pme.DEK) ([]byte, error) { return o.seal(dek, true) }

func (o *Object) seal(dek pme.DEK, repad bool) ([]byte, error) {
	out := []byte("PARE")
	appendModule := func(plain []byte) error {
		var err error
		out, err = dek.Seal(out, plain)
		return err
	}
	type placed struct{ start, end, data, dict int64 }
	spans := make([][]placed, len(o.Chunks))
	for i, row := range o.Chunks {
		for _, c := range row {
			p := placed{start: int64(len(out)), data: -1, dict: -1}
			for k := range c.Pages {
				pg := &c.Pages[k]
				if k == c.DataPage {
					p.data = int64(len(out))
				}
				if k == c.DictPage {
					p.dict = int64(len(out))
				}
				hdr := pg.RawHeader
				if hdr == nil {
					hdr = pg.Header.Append(nil)
				}
				if err := appendModule(hdr); err != nil {
					return nil, err
				}
				if pg.NoBody {
					continue
				}
				if err := appendModule(pg.Body); err != nil {
					return nil, err
				}
			}
			p.end = int64(len(out))
			if p.data < 0 {
				p.data = p.start
			}
			spans[i] = append(spans[i], p)
		}
	}
	for _, m := range o.Trailing {
		if err := appendModule(m); err != nil {
			return nil, err
		}
	}
	dataLen := len(out)
	if o.RawFooter == nil {
		if err := o.fixLayout(func(i, j int) (int64, int64, int64, int64, bool) {
			if i >= len(spans) || j >= len(spans[i]) {
				return 0, 0, 0, 0, false
			}
			p := spans[i][j]
			return p.start, p.end, p.data, p.dict, true
		}); err != nil {
			return nil, err
		}
	}
	finish := func() ([]byte, error) {
		plain := o.RawFooter
		if plain == nil {
			plain = o.Footer.Append(nil)
		}
		res := append(bytes.Clone(out), o.Crypto...)
		res, err := dek.Seal(res, plain)
		if err != nil {
			return nil, err
		}
		return pme.AppendTrailer(res, len(res)-dataLen)
	}
	if !repad {
		return finish()
	}
	pad, err := o.padEntry()
	if err != nil {
		return nil, err
	}
	pad.Set(KVKey, thrift.Binary([]byte(padme.PadKey)))
	pad.Set(KVValue, thrift.Binary(nil))
	b, err := finish()
	if err != nil {
		return nil, err
	}
	target, err := padme.Target(uint64(len(b)))
	if err != nil {
		return nil, err
	}
	p := padme.Solve(target - uint64(len(b)))
	pad.Set(KVKey, thrift.Binary([]byte(p.Key())))
	pad.Set(KVValue, thrift.Binary(make([]byte, p.ValueLen)))
	if b, err = finish(); err != nil {
		return nil, err
	}
	if uint64(len(b)) != target {
		return nil, fmt.Errorf("hostile: padded to %d bytes, want %d", len(b), target)
	}
	return b, nil
}

func (o *Object) padEntry() (*thrift.Struct, error) {
	v := o.Footer.Field(FMDKeyValue)
	var pad *thrift.Struct
	if v != nil && v.List != nil {
		for _, it := range v.List.Items {
			if k, err := it.Struct.Binary(KVKey); err == nil && padme.IsReserved(string(k)) {
				if pad != nil {
					return nil, errors.New("hostile: more than one pad entry")
				}
				pad = it.Struct
			}
		}
	}
	if pad == nil {
		return nil, errors.New("hostile: no pad entry")
	}
	return pad, nil
}

// fixLayout sets the offsets and sizes of every column chunk and row group
// of the footer that at(i, j) places.
func (o *Object) fixLayout(at func(i, j int) (start, end, data, dict int64, ok bool)) error {
	rgs, err := o.RowGroups()
	if err != nil {
		return nil // a footer without row groups has nothing to fix
	}
	for i, rg := range rgs {
		cols, err := rg.List(RGColumns)
		if err != nil {
			continue
		}
		rgStart, rgLen := int64(-1), int64(0)
		for j, v := range cols.Items {
			start, end, data, dict, ok := at(i, j)
			if !ok || v.Struct == nil {
				continue
			}
			md, err := v.Struct.Struct(CCMetaData)
			if err != nil {
				continue
			}
			md.Set(CMDDataPageOffset, thrift.I64(data))
			if dict >= 0 {
				md.Set(CMDDictPageOffset, thrift.I64(dict))
			}
			md.Set(CMDTotalCompressed, thrift.I64(end-start))
			if rgStart < 0 {
				rgStart = start
			}
			rgLen += end - start
		}
		if rgStart >= 0 {
			rg.Set(RGFileOffset, thrift.I64(rgStart))
		}
		rg.Set(RGTotalCompressed, thrift.I64(rgLen))
	}
	return nil
}
