-- cancel_chunk(tenant text, items jsonb): cancels matching pending orders in
-- id order and returns the changes; any order that does not match its
-- approval is CH409 naming the id, and the whole call changes nothing.
-- search_path: the chunks schema, then pgTAP's schema. Leaves nothing behind.
begin;
select plan(17);

insert into orders(id, tenant, qty, state, revision)
select g, 'acme', 2, 'pending', 3 from generate_series(201, 205) as g;
insert into orders(id, tenant, qty, state, revision) values
  (206, 'other', 2, 'pending', 3),
  (207, 'acme', 2, 'paid', 3);

select is(cancel_chunk('acme', '[{"id": 203, "revision": 3, "qty": 2}, {"id": 201, "revision": 3, "qty": 2}]'),
          '[{"id": 201, "previous_revision": 3, "new_revision": 4, "qty": 2},
            {"id": 203, "previous_revision": 3, "new_revision": 4, "qty": 2}]'::jsonb,
          'two matching orders: the changes, in id order');
select results_eq($$select id, state, revision from orders where id between 201 and 205 order by id$$,
                  $$values (201, 'cancelled', 4), (202, 'pending', 3), (203, 'cancelled', 4),
                           (204, 'pending', 3), (205, 'pending', 3)$$,
                  'exactly those two are cancelled, revision + 1');
select is(cancel_chunk('acme', '[{"id": 204, "revision": 3, "qty": 2}]'),
          '[{"id": 204, "previous_revision": 3, "new_revision": 4, "qty": 2}]'::jsonb,
          'a single order');

-- Each way an order can fail to match its approval.
select throws_ok($$select cancel_chunk('acme', '[{"id": 201, "revision": 3, "qty": 2}]')$$,
                 'CH409', 'order 201: state is cancelled', 'an order already cancelled: CH409');
select throws_ok($$select cancel_chunk('acme', '[{"id": 207, "revision": 3, "qty": 2}]')$$,
                 'CH409', 'order 207: state is paid', 'a paid order: CH409');
select throws_ok($$select cancel_chunk('acme', '[{"id": 202, "revision": 2, "qty": 2}]')$$,
                 'CH409', 'order 202: revision is 3, approved 2', 'another revision: CH409');
select throws_ok($$select cancel_chunk('acme', '[{"id": 202, "revision": 3, "qty": 5}]')$$,
                 'CH409', 'order 202: qty is 2, approved 5', 'another qty: CH409');
select throws_ok($$select cancel_chunk('acme', '[{"id": 206, "revision": 3, "qty": 2}]')$$,
                 'CH409', 'order 206: belongs to another tenant', 'another tenant''s order: CH409');
select throws_ok($$select cancel_chunk('acme', '[{"id": 299, "revision": 3, "qty": 2}]')$$,
                 'CH409', 'order 299: missing', 'an order that does not exist: CH409');

-- All or none: the first mismatch in id order is named and nothing changes.
select throws_ok($$select cancel_chunk('acme', '[{"id": 205, "revision": 9, "qty": 2}, {"id": 202, "revision": 3, "qty": 2}]')$$,
                 'CH409', 'order 205: revision is 3, approved 9', 'one bad order in a chunk: CH409 naming it');
select results_eq($$select id, state, revision from orders where id in (202, 205) order by id$$,
                  $$values (202, 'pending', 3), (205, 'pending', 3)$$,
                  'and its good order was not cancelled either');

-- Bad input: 22023 naming the field.
select throws_ok($$select cancel_chunk('a c m e', '[{"id": 202, "revision": 3, "qty": 2}]')$$,
                 '22023', 'tenant: must be 1 to 64 ASCII letters, digits, _ or -, got "a c m e"', 'a bad tenant: 22023');
select throws_ok($$select cancel_chunk('acme', '[{"id": 202, "revision": 3, "qty": 2.0}]')$$,
                 '22023', 'items[0].qty: must be an integer, got 2.0', 'qty 2.0: 22023 naming items[0].qty');
select throws_ok($$select cancel_chunk('acme', '{"id": 202, "revision": 3, "qty": 2}')$$,
                 '22023', 'items: must be a list of 1 to 64 targets, got object', 'an object instead of a list: 22023');
select throws_ok($$select cancel_chunk('acme', '[{"id": 202, "revision": 3, "qty": 2}, {"id": 202, "revision": 3, "qty": 2}]')$$,
                 '22023', 'items: duplicate id 202', 'a duplicate id: 22023');

select is(cancel_chunk('acme', '[{"id": 205, "revision": 3, "qty": 2}, {"id": 202, "revision": 3, "qty": 2}]') -> 0 -> 'id',
          '202'::jsonb, 'after all those refusals the transaction goes on: a good chunk still works');
select is((select count(*) from jobs) + (select count(*) from job_audit), 0::bigint,
          'cancel_chunk never writes jobs or job_audit');

select * from finish();
rollback;
