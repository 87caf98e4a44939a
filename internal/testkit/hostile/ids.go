package hostile

import (
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
)

// idCases are objects whose field IDs or key_ref break Sections 11.2 and
// 11.5 in ways a reader must not let pass silently: two fields that share an
// ID would make a projection by ID ambiguous (Open refuses them), and IDs
// below 1 and key_refs that are not random fail the conformance check.
func idCases() []Case {
	return []Case{
		{"field-ids-duplicate", "two fields share a field ID: Open refuses the schema, since a projection by that ID would be ambiguous (11.2)", reader.ErrField, []reader.Requirement{reader.ReqFieldIDs},
			fieldIDs(map[int]int32{3: 1})},
		{"field-id-zero", "field IDs are positive: 0 fails the check (11.2)", nil, []reader.Requirement{reader.ReqFieldIDs},
			fieldIDs(map[int]int32{1: 0})},
		{"field-id-minus-one", "field IDs are positive: -1, pqarrow's mark of a missing ID, fails the check (11.2)", nil, []reader.Requirement{reader.ReqFieldIDs},
			fieldIDs(map[int]int32{2: -1})},
		{"key-ref-zero", "key_metadata is a random key_ref: 16 zero bytes fail the check (11.5)", nil, []reader.Requirement{reader.ReqKeyRef},
			keyRef(make([]byte, 16))},
		{"key-ref-ascii", "key_metadata is a random key_ref, never a name: 16 printable ASCII bytes (health-key-2026!) fail the check (11.5)", nil, []reader.Requirement{reader.ReqKeyRef},
			keyRef([]byte("health-key-2026!"))},
	}
}

// fieldIDs returns a Build of a flat object whose schema elements (by
// index: 1 a, 2 s, 3 x) get the field IDs of ids.
func fieldIDs(ids map[int]int32) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			o.Schema()[i].Set(SEFieldID, thrift.I32(id))
		}
		o.dropKeyValue("ARROW:schema")
		return o.SealPadded(dek)
	}
}

// keyRef returns a Build of a flat object whose key_metadata is ref.
func keyRef(ref []byte) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200)
		if err != nil {
			return nil, err
		}
		if o.Crypto, err = pme.AppendFileCryptoMetaData(nil, ref); err != nil {
			return nil, err
		}
		return o.SealPadded(dek)
	}
}
