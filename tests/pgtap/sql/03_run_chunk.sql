-- run_chunk(job_id text): one call, one chunk, up to done and then the empty
-- done result; an order that changed since the approval and a stored job
-- that breaks the contract (tampered audit, targets or next_index) are CH409
-- and change nothing. From psql in autocommit each call is its own
-- transaction; here all run inside one that is rolled back at the end.
-- search_path: the chunks schema, then pgTAP's schema. Leaves nothing behind.
begin;
select plan(24);

insert into orders(id, tenant, qty, state, revision)
select g, 'alien-desert', 2, 'pending', 3 from generate_series(1, 25) as g;
select is(register(jsonb_build_object('job_id', 'festival', 'tenant', 'alien-desert', 'chunk_size', 10,
                                      'allow_partial', true,
                                      'targets', (select jsonb_agg(jsonb_build_object('id', g, 'revision', 3, 'qty', 2) order by g desc)
                                                    from generate_series(1, 25) as g))),
          true, 'the festival job of 25 orders, 10 at a time, is registered');

-- Chunk by chunk up to done.
select is(run_chunk('festival'), '{"processed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "next_index": 10, "done": false}'::jsonb,
          'chunk 1: orders 1 to 10');
select results_eq($$select count(*) from orders where state = 'cancelled'$$, array[10::bigint],
                  'after chunk 1, 10 orders are cancelled');
select is(run_chunk('festival'), '{"processed": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "next_index": 20, "done": false}'::jsonb,
          'chunk 2: orders 11 to 20');
select is(run_chunk('festival'), '{"processed": [21, 22, 23, 24, 25], "next_index": 25, "done": true}'::jsonb,
          'chunk 3: the last 5 orders, done');
select is(run_chunk('festival'), '{"processed": [], "next_index": 25, "done": true}'::jsonb,
          'a finished job: the empty done result');
select is(run_chunk('festival'), '{"processed": [], "next_index": 25, "done": true}'::jsonb,
          'and again');
select results_eq($$select ordinal, id, previous_revision, new_revision, qty from job_audit where job_id = 'festival' order by ordinal$$,
                  $$select g - 1, g, 3, 4, 2 from generate_series(1, 25) as g$$,
                  'one audit row per target, in order, with the approved values');
select results_eq($$select id, state, revision from orders order by id$$,
                  $$select g, 'cancelled', 4 from generate_series(1, 25) as g$$,
                  'every order cancelled exactly once (revision 3 -> 4)');
select is(inspect_job('festival') -> 'next_index', '25'::jsonb, 'next_index is 25');

-- Unknown job, bad job_id.
select throws_ok($$select run_chunk('no-such-job')$$, 'CH409', 'job no-such-job: not found', 'an unknown job: CH409');
select throws_ok($$select run_chunk('')$$, '22023', 'job_id: must be 1 to 64 ASCII letters, digits, _ or -, got ""',
                 'an empty job_id: 22023');
select throws_ok($$select run_chunk(null)$$, '22023', 'job_id: must be 1 to 64 ASCII letters, digits, _ or -, got null',
                 'a NULL job_id: 22023');

-- An order that changed after the approval stops its chunk; nothing is written.
insert into orders(id, tenant, qty, state, revision)
select g, 'acme', 2, 'pending', 3 from generate_series(31, 34) as g;
select lives_ok($$select register('{"job_id": "blocked", "tenant": "acme", "chunk_size": 2, "allow_partial": true,
                                    "targets": [{"id": 31, "revision": 3, "qty": 2}, {"id": 32, "revision": 3, "qty": 2},
                                                {"id": 33, "revision": 3, "qty": 2}, {"id": 34, "revision": 3, "qty": 2}]}')$$,
                'the blocked job is registered');
update orders set qty = 5, revision = revision + 1 where id = 32;
select throws_ok($$select run_chunk('blocked')$$, 'CH409', 'order 32: revision is 4, approved 3',
                 'an order changed since the approval: CH409 naming it');
select results_eq($$select (select next_index from jobs where job_id = 'blocked'),
                           (select count(*)::integer from job_audit where job_id = 'blocked'),
                           (select count(*)::integer from orders where id between 31 and 34 and state = 'pending')$$,
                  $$values (0, 0, 4)$$,
                  'and the chunk wrote nothing: next_index 0, no audit, all 4 orders still pending');

-- A stored job that breaks the contract is a conflict, whatever was tampered with.
insert into orders(id, tenant, qty, state, revision)
select g, 'acme', 2, 'pending', 3 from generate_series(41, 46) as g;
select lives_ok($$select register(jsonb_build_object('job_id', 'tampered', 'tenant', 'acme', 'chunk_size', 2, 'allow_partial', true,
                                                     'targets', (select jsonb_agg(jsonb_build_object('id', g, 'revision', 3, 'qty', 2))
                                                                   from generate_series(41, 46) as g)))$$,
                'the tampered job is registered');
select is(run_chunk('tampered') -> 'processed', '[41, 42]'::jsonb, 'its first chunk runs');

update job_audit set qty = 7 where job_id = 'tampered' and ordinal = 1;
select throws_ok($$select run_chunk('tampered')$$, 'CH409',
                 'job tampered: audit row 1 is (id 42, revision 3 -> 4, qty 7), approved (id 42, revision 3 -> 4, qty 2)',
                 'a tampered audit row: CH409');
select results_eq($$select (select next_index from jobs where job_id = 'tampered'),
                           (select count(*)::integer from orders where id between 43 and 46 and state = 'pending')$$,
                  $$values (2, 4)$$,
                  'and nothing moved: next_index 2, orders 43 to 46 still pending');
update job_audit set qty = 2 where job_id = 'tampered' and ordinal = 1;

delete from job_audit where job_id = 'tampered' and ordinal = 1;
select throws_ok($$select run_chunk('tampered')$$, 'CH409', 'job tampered: audit row 1 is missing (next_index is 2)',
                 'a deleted audit row: CH409');
insert into job_audit(job_id, ordinal, id, previous_revision, new_revision, qty) values
  ('tampered', 1, 42, 3, 4, 2), ('tampered', 2, 43, 3, 4, 2);
select throws_ok($$select run_chunk('tampered')$$, 'CH409', 'job tampered: audit row 2 is extra (next_index is 2)',
                 'an extra audit row: CH409');
delete from job_audit where job_id = 'tampered' and ordinal = 2;

update jobs set next_index = 3 where job_id = 'tampered';
select throws_ok($$select run_chunk('tampered')$$, 'CH409', 'job tampered: next_index 3 is not a multiple of chunk_size 2',
                 'next_index off a chunk boundary: CH409');
update jobs set next_index = 2 where job_id = 'tampered';

update jobs set targets = jsonb_set(targets, '{3,qty}', '2.0') where job_id = 'tampered';
select throws_ok($$select run_chunk('tampered')$$, 'CH409', 'job tampered: stored targets[3].qty: must be an integer, got 2.0',
                 'a stored target that is not valid: CH409');

select * from finish();
rollback;
