-- Which repositories, at which revision and commit, contain most of one
-- repository's directory: for each (repository, revision), how many of the
-- directory's files have a near-duplicate there (a band key shared,
-- fingerprints at most 84 bits apart and sizes within git's 80% window, as
-- in near-duplicates.sql; or the same blob, which also covers files too
-- small to fingerprint), and what share of the files and bytes
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
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh0 AS k FROM q WHERE mh0 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh1 AS k FROM q WHERE mh1 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh2 AS k FROM q WHERE mh2 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh3 AS k FROM q WHERE mh3 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh4 AS k FROM q WHERE mh4 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh5 AS k FROM q WHERE mh5 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh6 AS k FROM q WHERE mh6 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh7 AS k FROM q WHERE mh7 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh8 AS k FROM q WHERE mh8 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh9 AS k FROM q WHERE mh9 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh10 AS k FROM q WHERE mh10 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh11 AS k FROM q WHERE mh11 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh12 AS k FROM q WHERE mh12 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh13 AS k FROM q WHERE mh13 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh14 AS k FROM q WHERE mh14 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh15 AS k FROM q WHERE mh15 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh16 AS k FROM q WHERE mh16 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh17 AS k FROM q WHERE mh17 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh18 AS k FROM q WHERE mh18 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh19 AS k FROM q WHERE mh19 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh20 AS k FROM q WHERE mh20 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh21 AS k FROM q WHERE mh21 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh22 AS k FROM q WHERE mh22 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh23 AS k FROM q WHERE mh23 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh24 AS k FROM q WHERE mh24 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh25 AS k FROM q WHERE mh25 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh26 AS k FROM q WHERE mh26 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh27 AS k FROM q WHERE mh27 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh28 AS k FROM q WHERE mh28 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh29 AS k FROM q WHERE mh29 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh30 AS k FROM q WHERE mh30 IS NOT NULL
  UNION ALL
  SELECT repo, path, blob, size, version, fp0, fp1, fp2, fp3, mh31 AS k FROM q WHERE mh31 IS NOT NULL
),
others AS (
  SELECT f.* FROM fingerprints f CROSS JOIN params p WHERE f.repo <> p.repo
),
tkeys AS (
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh0 AS k FROM others WHERE mh0 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh1 AS k FROM others WHERE mh1 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh2 AS k FROM others WHERE mh2 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh3 AS k FROM others WHERE mh3 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh4 AS k FROM others WHERE mh4 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh5 AS k FROM others WHERE mh5 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh6 AS k FROM others WHERE mh6 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh7 AS k FROM others WHERE mh7 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh8 AS k FROM others WHERE mh8 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh9 AS k FROM others WHERE mh9 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh10 AS k FROM others WHERE mh10 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh11 AS k FROM others WHERE mh11 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh12 AS k FROM others WHERE mh12 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh13 AS k FROM others WHERE mh13 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh14 AS k FROM others WHERE mh14 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh15 AS k FROM others WHERE mh15 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh16 AS k FROM others WHERE mh16 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh17 AS k FROM others WHERE mh17 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh18 AS k FROM others WHERE mh18 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh19 AS k FROM others WHERE mh19 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh20 AS k FROM others WHERE mh20 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh21 AS k FROM others WHERE mh21 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh22 AS k FROM others WHERE mh22 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh23 AS k FROM others WHERE mh23 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh24 AS k FROM others WHERE mh24 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh25 AS k FROM others WHERE mh25 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh26 AS k FROM others WHERE mh26 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh27 AS k FROM others WHERE mh27 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh28 AS k FROM others WHERE mh28 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh29 AS k FROM others WHERE mh29 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh30 AS k FROM others WHERE mh30 IS NOT NULL
  UNION ALL
  SELECT repo, revision, commit, path, size, version, fp0, fp1, fp2, fp3, mh31 AS k FROM others WHERE mh31 IS NOT NULL
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
