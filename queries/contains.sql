-- Which repositories, at which revision and commit, contain most of one
-- repository's directory: for each (repository, revision), how many of the
-- directory's files have a near-duplicate there (a band key and a size
-- class shared, fingerprints at most 84 bits apart and sizes within git's
-- 80% window, as in near-duplicates.sql; or the same blob, which also
-- covers files too small to fingerprint), and what share of the files and bytes
-- that is. Reads the table or view `fingerprints` (README "Exports").
--
-- Parameters: the `params` line below (the repository's `repo` value and
-- the directory, with its trailing slash); benches/cross-repo.py replaces
-- that line. Same engines and the same xor() as near-duplicates.sql.
WITH params AS (
  SELECT 'redis' AS repo, 'deps/hiredis/' AS dir
),
q AS (
  SELECT f.* FROM fingerprints f CROSS JOIN params p
  WHERE f.repo = p.repo AND f.path LIKE CONCAT(p.dir, '%')
),
total AS (
  SELECT COUNT(*) AS files, SUM(size) AS bytes FROM q
),
kinds AS (
  SELECT 0 AS kind UNION ALL SELECT 1 AS kind
),
qsized AS (
  SELECT q.*, kinds.kind, CASE WHEN kinds.kind = 0 THEN size_class ELSE size_class_mid END AS class
  FROM q CROSS JOIN kinds WHERE q.mh0 IS NOT NULL
),
qkeys AS (
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh0 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh1 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh2 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh3 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh4 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh5 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh6 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh7 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh8 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh9 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh10 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh11 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh12 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh13 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh14 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh15 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh16 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh17 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh18 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh19 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh20 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh21 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh22 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh23 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh24 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh25 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh26 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh27 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh28 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh29 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh30 AS k FROM qsized
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, kind, class, mh31 AS k FROM qsized
),
others AS (
  SELECT f.* FROM fingerprints f CROSS JOIN params p WHERE f.repo <> p.repo
),
tsized AS (
  SELECT others.*, kinds.kind, CASE WHEN kinds.kind = 0 THEN size_class ELSE size_class_mid END AS class
  FROM others CROSS JOIN kinds WHERE others.mh0 IS NOT NULL
),
tkeys AS (
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh0 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh1 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh2 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh3 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh4 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh5 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh6 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh7 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh8 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh9 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh10 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh11 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh12 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh13 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh14 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh15 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh16 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh17 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh18 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh19 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh20 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh21 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh22 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh23 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh24 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh25 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh26 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh27 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh28 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh29 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh30 AS k FROM tsized
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, kind, class, mh31 AS k FROM tsized
),
matches AS (
  SELECT a.path AS qpath, a.size AS qsize, b.repo, b.revision, b.commit
  FROM qkeys a
  JOIN tkeys b ON a.k = b.k AND a.kind = b.kind AND a.class = b.class AND a.version = b.version
  WHERE a.size * 5 >= b.size * 4
    AND b.size * 5 >= a.size * 4
    AND CAST(bit_count(xor(a.fp0, b.fp0)) AS INT) +
      CAST(bit_count(xor(a.fp1, b.fp1)) AS INT) +
      CAST(bit_count(xor(a.fp2, b.fp2)) AS INT) +
      CAST(bit_count(xor(a.fp3, b.fp3)) AS INT) <= 84
  UNION ALL
  SELECT q.path AS qpath, q.size AS qsize, o.repo, o.revision, o.commit
  FROM q JOIN others o ON q.blob = o.blob
),
per_file AS (
  SELECT DISTINCT repo, revision, commit, qpath, qsize FROM matches
)
SELECT per_file.repo, per_file.revision, per_file.commit,
  COUNT(*) AS files, MAX(total.files) AS of_files,
  SUM(qsize) AS bytes, MAX(total.bytes) AS of_bytes,
  ROUND(100.0 * COUNT(*) / MAX(total.files), 1) AS percent_files,
  ROUND(100.0 * SUM(qsize) / MAX(total.bytes), 1) AS percent_bytes
FROM per_file CROSS JOIN total
GROUP BY per_file.repo, per_file.revision, per_file.commit
ORDER BY files DESC, bytes DESC, per_file.repo
