// Package seal is the writer's machinery for step 2 of the SOP-PME-1
// writer pipeline, "PME encryption under the object's DEK" (Section
// 11.12), in the layout DuckDB writes and reads (Section 11.3):
//
//		"PARE" | module | module | ... | FileCryptoMetaData | footer module | u32 LE len | "PARE"
//
//	  - Sealer turns plaintext Parquet files (the writer's row groups, each
//	    encoded by arrow-go into a file of its own, or an existing file
//	    sealed byte for byte) into that layout, a page at a time, copying
//	    only the bytes the footer references. It takes only what every
//	    SOP-PME-1 reader reads: the codecs and encodings DuckDB 1.5.6 and
//	    arrow-go both decode (ErrCodec, ErrEncoding), pages whose bytes bound
//	    their decompression (ErrUnboundedPage) and that pass the reader's
//	    page checks; it rewrites compressed DATA_PAGE_V2 pages as V1 ones and
//	    LZ4 pages as LZ4_RAW ones, which DuckDB reads.
//	  - Footer is the FileMetaData as an editable tree: the sealed object's
//	    (Sealer.Close), which the writer gives field IDs (Section 11.2), its
//	    metadata and the padding entry (Section 11.8), and seals (Section
//	    11.4); or a plaintext file's (ReadPlainFooter). What a reader sees of
//	    a footer is package pme's read-only view (Footer.View).
//
// Only package writer, the command line and the tests use it: package pme
// holds what a reader of the spec expects (the DEK, modules,
// FileCryptoMetaData, the footer view, constants and sentinels), and
// package writer exports the errors of this package its callers match.
package seal
