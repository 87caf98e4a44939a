// Package table reads a sequence of SOP-PME-1 objects as one table whose
// schema evolves by Parquet field ID, as Iceberg's does: columns are added,
// renamed, dropped and promoted (int32 to int64, float32 to float64,
// decimal(P, S) to decimal(P', S) with P' > P) between objects, and every
// object is read at the table's schema.
//
// Field IDs are what make this possible (SOP-PME-1 Section 11.2): every column
// of an object carries a stable Parquet field ID, assigned at table creation
// and never reused after a column is dropped, and an immutable published
// object cannot have one retrofitted. So a column is matched by its ID at
// every depth, never by its name: an object written before a rename holds the
// column under its old name, an object written before an add lacks it (it
// reads as nulls), and a column dropped and added again under the same name
// is another column.
//
// Every byte reaches a caller through package reader, per object and per
// byte range, verified against the object's storage_id before it is
// decrypted (Section 11.10). Nothing here answers from footer metadata:
// the rows of a Scan are the rows the objects' column chunks decode to, and
// an object whose projection reads no column of the table still has one of
// its columns materialised to count its rows. A Scan verifies what it reads,
// not the objects; only Verify makes objects count as verified (Section
// 11.10).
//
// The package takes the table's schema (an Arrow schema whose fields carry
// their field IDs, writer.FieldIDKey, at every depth) and the list of
// storage_ids; where they are kept is the catalog's business.
//
// # Errors
//
// A column a name or ID does not resolve, or a column of an object whose type
// the table's cannot be read as, is a *ColumnError matching ErrColumn or
// ErrSchema. An object that fails to open, verify, authenticate or decode
// fails a Scan with an *ObjectError naming it, which wraps the reader's error:
// errors.Is(err, verify.ErrVerify) holds for damaged bytes.
package table
