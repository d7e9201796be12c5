-- near-duplicates.sql for millions of rows: adjacent bands joined into 16
-- keys of 24 bits (bands 2i and 2i+1 overlap by 8 bits), so unrelated
-- files share a key 256 times less often and the join stays linear in
-- practice, for a lower recall of edited copies (README, "Finding similar
-- files across repositories"). Everything else is near-duplicates.sql's.
--
-- Similar files across repositories: one row per pair of files in two
-- different repositories whose fingerprints are at most 84 bits apart (of
-- 256), keeping for each file its 10 nearest matches in each other
-- repository. Reads a table or view `fingerprints`: the union of any number
-- of `git simm export` files (schema version 1002, README "Exports").
--
-- Runs unchanged on DuckDB, Apache Spark 4 and Apache DataFusion, given a
-- function xor(BIGINT, BIGINT) (DuckDB has it; on Spark:
--   CREATE TEMPORARY FUNCTION xor(a BIGINT, b BIGINT) RETURNS BIGINT RETURN a ^ b
-- on DataFusion, register xor and bit_count as UDFs: queries/README.md).
--
-- 1. Every fingerprinted row once per key: its 16 wide keys and the key of
--    its file name (vendored copies keep their names while edits move
--    their fingerprints apart; git's rename detection pairs names first).
-- 2. The equi-join on the key: pairs sharing a key, in different
--    repositories, within git's size window at 80% (the smaller file at
--    least 4/5 of the larger, or no git score can reach 80%).
-- 3. The Hamming distance, bit_count of XOR over the four 64-bit words, at
--    most 84 (filtered in the join, before DISTINCT sees the pairs): the farthest pairs at git score 80% or more reach 82 bits
--    (`radius_for` in src/groups/mod.rs, calibrated on real edits).
-- 4. The 10 nearest per file and other repository, from either side.
-- Fingerprints estimate; `git simm similar` scores exactly (the check step
-- of benches/cross-repo.py re-scores every pair).
WITH keys AS (
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band0 * 65536 + band1 % 65536 AS k FROM fingerprints WHERE band0 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band2 * 65536 + band3 % 65536 AS k FROM fingerprints WHERE band2 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band4 * 65536 + band5 % 65536 AS k FROM fingerprints WHERE band4 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band6 * 65536 + band7 % 65536 AS k FROM fingerprints WHERE band6 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band8 * 65536 + band9 % 65536 AS k FROM fingerprints WHERE band8 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band10 * 65536 + band11 % 65536 AS k FROM fingerprints WHERE band10 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band12 * 65536 + band13 % 65536 AS k FROM fingerprints WHERE band12 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band14 * 65536 + band15 % 65536 AS k FROM fingerprints WHERE band14 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band16 * 65536 + band17 % 65536 AS k FROM fingerprints WHERE band16 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band18 * 65536 + band19 % 65536 AS k FROM fingerprints WHERE band18 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band20 * 65536 + band21 % 65536 AS k FROM fingerprints WHERE band20 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band22 * 65536 + band23 % 65536 AS k FROM fingerprints WHERE band22 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band24 * 65536 + band25 % 65536 AS k FROM fingerprints WHERE band24 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band26 * 65536 + band27 % 65536 AS k FROM fingerprints WHERE band26 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band28 * 65536 + band29 % 65536 AS k FROM fingerprints WHERE band28 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, band30 * 65536 + band31 % 65536 AS k FROM fingerprints WHERE band30 IS NOT NULL
  UNION ALL
  SELECT version, repo, revision, COALESCE(path, blob) AS name, blob, size, fp0, fp1, fp2, fp3, name_key AS k FROM fingerprints WHERE name_key IS NOT NULL AND fp0 IS NOT NULL
),
candidates AS (
  SELECT DISTINCT
    a.repo AS repo_a, a.revision AS revision_a, a.name AS path_a, a.blob AS blob_a, a.size AS size_a,
    b.repo AS repo_b, b.revision AS revision_b, b.name AS path_b, b.blob AS blob_b, b.size AS size_b,
    CAST(bit_count(xor(a.fp0, b.fp0)) AS INT) +
    CAST(bit_count(xor(a.fp1, b.fp1)) AS INT) +
    CAST(bit_count(xor(a.fp2, b.fp2)) AS INT) +
    CAST(bit_count(xor(a.fp3, b.fp3)) AS INT) AS distance
  FROM keys a
  JOIN keys b ON a.k = b.k AND a.version = b.version
  WHERE a.repo < b.repo
    AND a.size * 5 >= b.size * 4
    AND b.size * 5 >= a.size * 4
    AND CAST(bit_count(xor(a.fp0, b.fp0)) AS INT) +
      CAST(bit_count(xor(a.fp1, b.fp1)) AS INT) +
      CAST(bit_count(xor(a.fp2, b.fp2)) AS INT) +
      CAST(bit_count(xor(a.fp3, b.fp3)) AS INT) <= 84
),
ranked AS (
  SELECT candidates.*,
    ROW_NUMBER() OVER (PARTITION BY repo_a, revision_a, path_a, repo_b ORDER BY distance, path_b, revision_b) AS rank_a,
    ROW_NUMBER() OVER (PARTITION BY repo_b, revision_b, path_b, repo_a ORDER BY distance, path_a, revision_a) AS rank_b
  FROM candidates
)
SELECT repo_a, revision_a, path_a, blob_a, size_a, repo_b, revision_b, path_b, blob_b, size_b, distance
FROM ranked
WHERE rank_a <= 10 OR rank_b <= 10
ORDER BY repo_a, path_a, repo_b, distance, path_b
