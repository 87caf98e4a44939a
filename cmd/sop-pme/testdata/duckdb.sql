-- The plaintext Parquet files written by DuckDB that the tests import
-- (TestImportDuckDB). Written by DuckDB 1.5.6:
--   duckdb < duckdb.sql   (or: python3 -c "import duckdb; duckdb.sql(open('duckdb.sql').read())")
-- run in this directory. The CLI module does not depend on DuckDB.
CREATE TABLE t AS
SELECT i::BIGINT AS id,
       'name-' || (i % 97) AS name,
       (i * 1.25)::DOUBLE AS amount,
       DATE '2026-01-01' + (i % 365)::INTEGER AS day,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i % 2 = 0 END AS flag,
       [i, i + 1] AS pair,
       {'a': i % 10, 'b': 'x' || i} AS st
FROM range(3000) r(i);
COPY t TO 'duckdb-no-field-ids.parquet' (FORMAT parquet, ROW_GROUP_SIZE 1000);
COPY t TO 'duckdb-field-ids.parquet' (FORMAT parquet, ROW_GROUP_SIZE 1000,
    FIELD_IDS {id: 10, name: 11, amount: 12, day: 13, flag: 14,
               pair: {__duckdb_field_id: 15, element: 16},
               st: {__duckdb_field_id: 17, a: 18, b: 19}});
