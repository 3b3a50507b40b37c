-- Reserved: another branch brings migration 005. tern refuses a gap in the
-- numbering, so until that lands this placeholder holds the number and does
-- nothing. When the real 005 is merged, delete this file (two files numbered
-- 005 make tern fail with "Duplicate migration 5").
select 1;
