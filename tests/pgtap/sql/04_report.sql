-- report(job_id text): the six id-ordered lists: approved, committed,
-- remaining, and for the committed part matching, drifted and missing. It
-- changes nothing; an unknown job is CH409.
-- search_path: the chunks schema, then pgTAP's schema. Leaves nothing behind.
begin;
select plan(14);

insert into orders(id, tenant, qty, state, revision)
select g, 'acme', 2, 'pending', 3 from generate_series(101, 108) as g;
select is(register(jsonb_build_object('job_id', 'rep', 'tenant', 'acme', 'chunk_size', 2, 'allow_partial', true,
                                      'targets', (select jsonb_agg(jsonb_build_object('id', g, 'revision', 3, 'qty', 2) order by g desc)
                                                    from generate_series(101, 108) as g))),
          true, 'a job of 8 orders, 2 at a time, is registered');

select is(report('rep'),
          '{"approved": [101, 102, 103, 104, 105, 106, 107, 108], "committed": [],
            "remaining": [101, 102, 103, 104, 105, 106, 107, 108],
            "matching": [], "drifted": [], "missing": []}'::jsonb,
          'before any chunk: everything remains');

select lives_ok($$select run_chunk('rep')$$, 'chunk 1 runs');
select lives_ok($$select run_chunk('rep')$$, 'chunk 2 runs');
select lives_ok($$select run_chunk('rep')$$, 'chunk 3 runs');
select is(report('rep'),
          '{"approved": [101, 102, 103, 104, 105, 106, 107, 108],
            "committed": [101, 102, 103, 104, 105, 106], "remaining": [107, 108],
            "matching": [101, 102, 103, 104, 105, 106], "drifted": [], "missing": []}'::jsonb,
          'after 3 chunks: 6 committed, all matching, 2 remaining');

-- The world moves on after the job.
update orders set qty = 5, revision = revision + 1 where id = 102;            -- another qty
update orders set state = 'pending', revision = revision + 1 where id = 104;  -- un-cancelled
update orders set tenant = 'other' where id = 105;                            -- another tenant (no revision bump)
delete from orders where id = 103;
insert into orders(id, tenant, qty, state, revision) values (199, 'acme', 2, 'cancelled', 4); -- 103's values, another id
update orders set qty = 9, revision = revision + 1 where id = 108;            -- not committed: not judged

create temp table before on commit drop as
select (select jsonb_agg(o order by o.id) from orders as o) as orders,
       (select jsonb_agg(j) from jobs as j) as jobs,
       (select jsonb_agg(a order by a.ordinal) from job_audit as a) as audit;

select is(report('rep'),
          '{"approved": [101, 102, 103, 104, 105, 106, 107, 108],
            "committed": [101, 102, 103, 104, 105, 106], "remaining": [107, 108],
            "matching": [101, 106], "drifted": [102, 104, 105], "missing": [103]}'::jsonb,
          'after the changes: matching, drifted and missing');
select results_eq($$select jsonb_array_elements(report('rep') -> 'drifted')::integer$$, array[102, 104, 105],
                  'drifted lists qty, state and tenant changes, in id order');
select results_eq($$select jsonb_array_elements(report('rep') -> 'missing')::integer$$, array[103],
                  'missing is the deleted order: an equal order under another id does not stand in');
select results_eq($$select jsonb_array_elements(report('rep') -> 'remaining')::integer$$, array[107, 108],
                  'an uncommitted order that changed is only remaining, never drifted');

select is((select (select jsonb_agg(o order by o.id) from orders as o) = b.orders
              and (select jsonb_agg(j) from jobs as j) = b.jobs
              and (select jsonb_agg(a order by a.ordinal) from job_audit as a) = b.audit
             from before as b),
          true, 'report changed nothing');
select volatility_is(current_schema(), 'report', array['text'], 'stable', 'report is STABLE: it cannot write');

select throws_ok($$select report('no-such-job')$$, 'CH409', 'job no-such-job: not found', 'an unknown job: CH409');
select throws_ok($$select report('x' || repeat('y', 64))$$, '22023',
                 'job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 65 characters', 'a 65-character job_id: 22023');

select * from finish();
rollback;
