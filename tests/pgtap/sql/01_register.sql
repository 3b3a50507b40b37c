-- register(plan jsonb): a new approval is true, the same approval again is
-- false, a different one under the same job_id is CH409, and bad input is
-- 22023 naming the field, before anything is written.
-- search_path: the chunks schema, then pgTAP's schema. Leaves nothing behind.
begin;
select plan(29);

-- The plan every case below starts from; its targets are deliberately unsorted.
create temp table base on commit drop as
select '{"job_id": "reg-1", "tenant": "alien-desert", "chunk_size": 2, "allow_partial": true,
         "targets": [{"id": 12, "revision": 0, "qty": 1},
                     {"id": 10, "revision": 3, "qty": 2},
                     {"id": 11, "revision": 5, "qty": 1000}]}'::jsonb as plan;

-- New, then the same again.
select is((select register(plan) from base), true, 'a new plan is registered: true');
select is(inspect_job('reg-1'),
          '{"job_id": "reg-1", "tenant": "alien-desert", "chunk_size": 2, "next_index": 0,
            "targets": [{"id": 10, "revision": 3, "qty": 2},
                        {"id": 11, "revision": 5, "qty": 1000},
                        {"id": 12, "revision": 0, "qty": 1}]}'::jsonb,
          'the job is stored with targets sorted by id and next_index 0');
select is((select register(plan) from base), false, 'the same plan again: false');
select is((select register(plan || '{"targets": [{"qty": 1000, "revision": 5, "id": 11},
                                                 {"id": 12, "revision": 0, "qty": 1},
                                                 {"id": 10, "revision": 3, "qty": 2}]}') from base),
          false, 'the same targets in another order and key order: false');

-- A different approval under the same id.
select throws_ok($$select register(plan || '{"tenant": "other"}') from base$$,
                 'CH409', 'job reg-1: already registered for tenant "alien-desert", not "other"',
                 'another tenant under the same job_id: CH409');
select throws_ok($$select register(plan || '{"chunk_size": 3}') from base$$,
                 'CH409', 'job reg-1: already registered with chunk_size 2, not 3',
                 'another chunk_size under the same job_id: CH409');
select throws_ok($$select register(plan || '{"targets": [{"id": 10, "revision": 3, "qty": 2}]}') from base$$,
                 'CH409', 'job reg-1: already registered with different targets',
                 'other targets under the same job_id: CH409');
select throws_ok($$select register(plan || '{"targets": [{"id": 10, "revision": 4, "qty": 2},
                                                        {"id": 11, "revision": 5, "qty": 1000},
                                                        {"id": 12, "revision": 0, "qty": 1}]}') from base$$,
                 'CH409', 'job reg-1: already registered with different targets',
                 'one other revision under the same job_id: CH409');

-- Registering again never resets progress.
update jobs set next_index = 2 where job_id = 'reg-1';
select is((select register(plan) from base), false, 'the same plan on a job in progress: false');
select is(inspect_job('reg-1') -> 'next_index', '2'::jsonb, 'and next_index is not reset');

-- jsonb has already parsed the number text: 1e3 arrives as 1000, 1.0 keeps its scale.
select is((select register(plan || '{"job_id": "reg-exp", "targets": [{"id": 1, "revision": 2e0, "qty": 1e3}]}') from base),
          true, 'qty 1e3 is accepted: jsonb made it 1000');
select is(inspect_job('reg-exp') -> 'targets', '[{"id": 1, "revision": 2, "qty": 1000}]'::jsonb,
          'and it is stored as the integers 2 and 1000');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 1.0, "qty": 2}]}') from base$$,
                 '22023', 'targets[0].revision: must be an integer, got 1.0', 'revision 1.0: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "chunk_size": 2.0}') from base$$,
                 '22023', 'chunk_size: must be an integer, got 2.0', 'chunk_size 2.0: 22023');

-- Other representative refusals, each naming its field.
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 0, "qty": "2"}]}') from base$$,
                 '22023', 'targets[0].qty: must be an integer, got "2"', 'qty as a string: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 0, "qty": true}]}') from base$$,
                 '22023', 'targets[0].qty: must be an integer, got true', 'qty true: 22023 (true is never 1)');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 0, "qty": 2}, {"id": 0, "revision": 0, "qty": 2}]}') from base$$,
                 '22023', 'targets[1].id: must be between 1 and 2147483647, got 0', 'id 0: 22023 naming targets[1].id');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 0, "qty": 1001}]}') from base$$,
                 '22023', 'targets[0].qty: must be between 1 and 1000, got 1001', 'qty 1001: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 1, "revision": 0, "qty": 2, "note": "x"}]}') from base$$,
                 '22023', 'targets[0]: must have exactly the keys id, revision, qty, got {"id": 1, "qty": 2, "note": "x", "revision": 0}',
                 'a target with an extra key: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": [{"id": 7, "revision": 0, "qty": 2}, {"id": 7, "revision": 1, "qty": 3}]}') from base$$,
                 '22023', 'targets: duplicate id 7', 'a duplicate id: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "targets": []}') from base$$,
                 '22023', 'targets: must be a list of 1 to 64 targets, got 0', 'no targets: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg bad"}') from base$$,
                 '22023', 'job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "reg bad"', 'a job_id with a space: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "tenant": 7}') from base$$,
                 '22023', 'tenant: must be a string, got number', 'a tenant that is a number: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "chunk_size": 11}') from base$$,
                 '22023', 'chunk_size: must be between 1 and 10, got 11', 'chunk_size 11: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "allow_partial": false}') from base$$,
                 '22023', 'allow_partial: must be true (each chunk commits on its own), got false', 'allow_partial false: 22023');
select throws_ok($$select register((plan || '{"job_id": "reg-bad"}') - 'allow_partial') from base$$,
                 '22023', 'plan: missing key "allow_partial"', 'a plan without allow_partial: 22023');
select throws_ok($$select register(plan || '{"job_id": "reg-bad", "approved_by": "me"}') from base$$,
                 '22023', 'plan: unexpected key "approved_by"', 'a plan with an extra key: 22023');
select throws_ok($$select register(null)$$,
                 '22023', 'plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got null',
                 'a NULL plan: 22023');

select results_eq($$select job_id from jobs order by job_id$$, array['reg-1', 'reg-exp'],
                  'no refused plan wrote anything');

select * from finish();
rollback;
