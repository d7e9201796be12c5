-- Similar files across repositories: one row per pair of blobs in two
-- different repositories that are the same blob, or share a band key and
-- have fingerprints at most 84 bits apart (of 256) and signatures whose
-- edit distance estimates a git score near 80% or more, keeping for each blob
-- its 10 nearest matches in each other repository, each blob named by one
-- of its paths. Reads a table or view `fingerprints`: the union of any
-- number of `git simm export` files (schema version 3002, README
-- "Exports").
--
-- Runs unchanged on DuckDB, Apache Spark 4 and Apache DataFusion, given a
-- function xor(BIGINT, BIGINT) (DuckDB has it; on Spark:
--   CREATE TEMPORARY FUNCTION xor(a BIGINT, b BIGINT) RETURNS BIGINT RETURN a ^ b
-- on DataFusion, register xor and bit_count as UDFs: queries/README.md).
--
-- 1. Each content once (by `blob_key`, the first 64 bits of the blob id),
--    however many repositories, paths and revisions hold it: a blob
--    vendored by a thousand repositories, or a tree with a thousand copies
--    of one file, joins once. Integers, not the hex ids, go through the
--    joins and sorts: a quarter of the width.
-- 2. Every blob once per band key (mh0..mh31: MinHash over git's chunk
--    buckets, 4 minima per band).
-- 3. The equi-join on the key: pairs of different blobs sharing a key,
--    within git's size window at 80% (the smaller file at least 4/5 of the
--    larger, or no git score can reach 80%), and the Hamming distance
--    (bit_count of XOR over the four 64-bit words) at most 84: the farthest
--    pairs at git score 80% or more reach 82 bits (the pinned corpus
--    edited as real edits go, every pair scored by git's rule; the recall
--    benches/cross-repo.py measures on real repositories covers this step).
-- 3b. The estimate: the engine's own levenshtein() over the two files'
--    sketches (about 128 symbols of their Coates signatures, at the same
--    level: docs/signatures.md): estimate = 100 - 100 * distance / longer
--    sketch, an estimate of git's score. Pairs under ESTIMATE_MIN are dropped: on the pairs of
--    the ten-repository set, that keeps 98.5% of those at git score 80% or
--    more, and 91% of the pairs kept score 80% or more. Only the candidates' signatures are compared, once per pair.
-- 4. Those pairs, and each blob with itself (identical copies), spread
--    over the repositories holding each side, for different repositories.
-- 5. The 10 nearest per blob and other repository, from either side.
-- 6. Each blob's first path (and the revision holding it) and how many
--    paths hold it in its repository.
-- Fingerprints and signatures estimate; `git simm similar` scores exactly
-- (the check step of benches/cross-repo.py re-scores every pair).
WITH blobs AS (
  SELECT DISTINCT version, blob_key, size, fp0, fp1, fp2, fp3,
    mh0, mh1, mh2, mh3, mh4, mh5, mh6, mh7, mh8, mh9, mh10, mh11, mh12, mh13, mh14, mh15,
    mh16, mh17, mh18, mh19, mh20, mh21, mh22, mh23, mh24, mh25, mh26, mh27, mh28, mh29, mh30, mh31
  FROM fingerprints
  WHERE mh0 IS NOT NULL
),
keys AS (
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh0 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh1 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh2 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh3 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh4 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh5 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh6 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh7 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh8 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh9 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh10 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh11 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh12 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh13 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh14 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh15 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh16 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh17 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh18 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh19 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh20 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh21 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh22 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh23 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh24 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh25 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh26 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh27 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh28 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh29 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh30 AS k FROM blobs
  UNION ALL
  SELECT version, blob_key AS id, size, fp0, fp1, fp2, fp3, mh31 AS k FROM blobs
),
candidates AS (
  SELECT DISTINCT
    a.version, a.id AS blob_a, b.id AS blob_b,
    CAST(bit_count(xor(a.fp0, b.fp0)) AS INT) +
    CAST(bit_count(xor(a.fp1, b.fp1)) AS INT) +
    CAST(bit_count(xor(a.fp2, b.fp2)) AS INT) +
    CAST(bit_count(xor(a.fp3, b.fp3)) AS INT) AS distance
  FROM keys a
  JOIN keys b ON a.k = b.k AND a.version = b.version
  WHERE a.id < b.id
    AND a.size * 5 >= b.size * 4
    AND b.size * 5 >= a.size * 4
    AND CAST(bit_count(xor(a.fp0, b.fp0)) AS INT) +
      CAST(bit_count(xor(a.fp1, b.fp1)) AS INT) +
      CAST(bit_count(xor(a.fp2, b.fp2)) AS INT) +
      CAST(bit_count(xor(a.fp3, b.fp3)) AS INT) <= 84
),
signatures AS (
  SELECT DISTINCT version, blob_key, sketch_level, sketch, sketch_next
  FROM fingerprints
  WHERE mh0 IS NOT NULL
),
measured AS (
  -- Sizes within 4/5 of each other have sketch levels at most one apart:
  -- the larger file's sketch against the smaller's next level then.
  SELECT c.version, c.blob_a, c.blob_b, c.distance,
    CASE
      WHEN sa.sketch_level = sb.sketch_level THEN levenshtein(sa.sketch, sb.sketch)
      WHEN sa.sketch_level < sb.sketch_level THEN levenshtein(sa.sketch_next, sb.sketch)
      ELSE levenshtein(sa.sketch, sb.sketch_next)
    END AS symbols,
    CASE
      WHEN sa.sketch_level = sb.sketch_level THEN GREATEST(length(sa.sketch), length(sb.sketch))
      WHEN sa.sketch_level < sb.sketch_level THEN GREATEST(length(sa.sketch_next), length(sb.sketch))
      ELSE GREATEST(length(sa.sketch), length(sb.sketch_next))
    END AS longer
  FROM candidates c
  LEFT JOIN signatures sa ON sa.blob_key = c.blob_a AND sa.version = c.version
  LEFT JOIN signatures sb ON sb.blob_key = c.blob_b AND sb.version = c.version
),
estimated AS (
  -- ESTIMATE_MIN = 75: keep symbols / longer <= 25%, in integers so that
  -- every engine keeps the same pairs.
  SELECT version, blob_a, blob_b, distance,
    100 - CAST(FLOOR(symbols * 100.0 / GREATEST(longer, 1)) AS INT) AS estimate
  FROM measured
  WHERE symbols * 100 <= (100 - 75) * longer
),
pairs AS (
  SELECT version, blob_a, blob_b, distance, estimate FROM estimated
  UNION ALL
  SELECT version, blob_b AS blob_a, blob_a AS blob_b, distance, estimate FROM estimated
  UNION ALL
  SELECT version, blob_key AS blob_a, blob_key AS blob_b, 0 AS distance, 100 AS estimate FROM blobs
),
holders AS (
  SELECT DISTINCT repo, blob_key FROM fingerprints WHERE mh0 IS NOT NULL
),
expanded AS (
  SELECT ha.repo AS repo_a, p.blob_a, hb.repo AS repo_b, p.blob_b, p.distance, p.estimate
  FROM pairs p
  JOIN holders ha ON ha.blob_key = p.blob_a
  JOIN holders hb ON hb.blob_key = p.blob_b
  -- Not `ha.repo < hb.repo`: as a comparison of the two holders it would
  -- let an optimiser join them to each other first (DuckDB does, a range
  -- join of every repository pair), before the pairs narrow them down.
  WHERE CASE WHEN ha.repo < hb.repo THEN 1 ELSE 0 END = 1
),
ranked AS (
  SELECT expanded.*,
    ROW_NUMBER() OVER (PARTITION BY repo_a, blob_a, repo_b ORDER BY estimate DESC, distance, blob_b) AS rank_a,
    ROW_NUMBER() OVER (PARTITION BY repo_b, blob_b, repo_a ORDER BY estimate DESC, distance, blob_a) AS rank_b
  FROM expanded
),
best AS (
  SELECT * FROM ranked WHERE rank_a <= 10 OR rank_b <= 10
),
named AS (
  SELECT repo, blob_key, blob, size, revision, COALESCE(path, blob) AS path,
    ROW_NUMBER() OVER (PARTITION BY repo, blob_key ORDER BY COALESCE(path, blob), revision) AS nth,
    COUNT(*) OVER (PARTITION BY repo, blob_key) AS paths
  FROM fingerprints
  WHERE mh0 IS NOT NULL
)
SELECT r.repo_a, na.revision AS revision_a, na.path AS path_a, na.blob AS blob_a, na.size AS size_a,
  na.paths AS paths_a,
  r.repo_b, nb.revision AS revision_b, nb.path AS path_b, nb.blob AS blob_b, nb.size AS size_b,
  nb.paths AS paths_b,
  r.distance, r.estimate
FROM best r
JOIN named na ON na.repo = r.repo_a AND na.blob_key = r.blob_a
JOIN named nb ON nb.repo = r.repo_b AND nb.blob_key = r.blob_b
WHERE na.nth = 1 AND nb.nth = 1
ORDER BY r.repo_a, path_a, r.repo_b, r.estimate DESC, r.distance, path_b
