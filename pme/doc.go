// Package pme implements the Parquet Modular Encryption layer of SOP-PME-1
// (Sections 11.1–11.4 of the SOP spec): the encrypted-footer layout that
// DuckDB writes, with AES-GCM modules under one per-object DEK and the empty
// AAD.
//
//	"PARE" | module | module | ... | FileCryptoMetaData | footer module | u32 LE len | "PARE"
//
// Every module is u32 LE length | 12-byte nonce | ciphertext | 16-byte tag,
// sealed with a fresh random nonce (DEK.Seal) and no AAD (Section 11.3).
// Each page header and each page body is a module of its own; the footer
// (FileMetaData) is one more. FileCryptoMetaData is plaintext: AES_GCM_V1
// with no field set, and key_metadata holding the 16-byte key_ref (Section
// 11.5).
//
// The package has three parts:
//
//   - DEK: the data encryption key, which never prints and counts the
//     modules it seals (at most 2^32), with Seal, Open and OpenModules.
//   - Footer: the decoded FileMetaData, read-only, which the reader opens
//     (OpenFooter) and the writer checks before it publishes (ParseFooter):
//     its column chunks, fields and key-value entries, bounded by its size,
//     and what a Parquet decoder may be given of it (StripForReading).
//   - The parsers of the plaintext parts of a file: ParseTrailer,
//     ParseFooterRegion, ParseFileCryptoMetaData, SplitModule. They accept
//     only the empty-AAD AES_GCM_V1 construction; there is no plaintext
//     footer mode anywhere in the package (Section 11.4).
//
// A footer opened for reading (OpenFooter) is decoded into a compact,
// read-only form, at most one value per two footer bytes beyond the first
// 64 Ki and 16 bytes per value; Footer.Fields bounds the schema's paths and
// elements, and Footer.KeyValues the key-value entries, by the footer's
// size: what a footer costs is a small multiple of its bytes, however a
// producer who holds the DEK crafts it.
//
// Sealing plaintext Parquet pages into this layout, and editing a footer
// (field IDs, padding), are the writer's (internal/seal, used by package
// writer).
//
// Modules are not bound to their position: with the empty AAD, a module
// moved within an object, or into another object under the same DEK, still
// opens. Only the storage_id binds them (Section 11.10), which is why
// nothing reads an object except through package verify.
package pme
