-- Which repositories, at which revision and commit, contain most of one
-- repository's directory: for each (repository, revision), how many of the
-- directory's files have a near-duplicate there (fingerprints at most 84
-- bits apart and sizes within git's 80% window, or the same blob for
-- files too small to fingerprint), and what share of the files and bytes
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
qkeys AS (
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band0 AS k FROM q WHERE band0 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band1 AS k FROM q WHERE band1 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band2 AS k FROM q WHERE band2 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band3 AS k FROM q WHERE band3 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band4 AS k FROM q WHERE band4 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band5 AS k FROM q WHERE band5 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band6 AS k FROM q WHERE band6 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band7 AS k FROM q WHERE band7 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band8 AS k FROM q WHERE band8 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band9 AS k FROM q WHERE band9 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band10 AS k FROM q WHERE band10 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band11 AS k FROM q WHERE band11 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band12 AS k FROM q WHERE band12 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band13 AS k FROM q WHERE band13 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band14 AS k FROM q WHERE band14 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band15 AS k FROM q WHERE band15 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band16 AS k FROM q WHERE band16 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band17 AS k FROM q WHERE band17 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band18 AS k FROM q WHERE band18 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band19 AS k FROM q WHERE band19 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band20 AS k FROM q WHERE band20 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band21 AS k FROM q WHERE band21 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band22 AS k FROM q WHERE band22 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band23 AS k FROM q WHERE band23 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band24 AS k FROM q WHERE band24 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band25 AS k FROM q WHERE band25 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band26 AS k FROM q WHERE band26 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band27 AS k FROM q WHERE band27 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band28 AS k FROM q WHERE band28 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band29 AS k FROM q WHERE band29 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band30 AS k FROM q WHERE band30 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, band31 AS k FROM q WHERE band31 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, name_key AS k FROM q WHERE name_key IS NOT NULL AND fp0 IS NOT NULL
),
others AS (
  SELECT f.* FROM fingerprints f CROSS JOIN params p WHERE f.repo <> p.repo
),
tkeys AS (
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band0 AS k FROM others WHERE band0 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band1 AS k FROM others WHERE band1 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band2 AS k FROM others WHERE band2 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band3 AS k FROM others WHERE band3 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band4 AS k FROM others WHERE band4 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band5 AS k FROM others WHERE band5 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band6 AS k FROM others WHERE band6 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band7 AS k FROM others WHERE band7 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band8 AS k FROM others WHERE band8 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band9 AS k FROM others WHERE band9 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band10 AS k FROM others WHERE band10 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band11 AS k FROM others WHERE band11 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band12 AS k FROM others WHERE band12 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band13 AS k FROM others WHERE band13 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band14 AS k FROM others WHERE band14 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band15 AS k FROM others WHERE band15 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band16 AS k FROM others WHERE band16 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band17 AS k FROM others WHERE band17 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band18 AS k FROM others WHERE band18 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band19 AS k FROM others WHERE band19 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band20 AS k FROM others WHERE band20 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band21 AS k FROM others WHERE band21 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band22 AS k FROM others WHERE band22 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band23 AS k FROM others WHERE band23 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band24 AS k FROM others WHERE band24 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band25 AS k FROM others WHERE band25 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band26 AS k FROM others WHERE band26 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band27 AS k FROM others WHERE band27 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band28 AS k FROM others WHERE band28 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band29 AS k FROM others WHERE band29 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band30 AS k FROM others WHERE band30 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, band31 AS k FROM others WHERE band31 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, name_key AS k FROM others WHERE name_key IS NOT NULL AND fp0 IS NOT NULL
),
matches AS (
  SELECT a.path AS qpath, a.size AS qsize, b.repo, b.revision, b.commit
  FROM qkeys a
  JOIN tkeys b ON a.k = b.k AND a.version = b.version
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
