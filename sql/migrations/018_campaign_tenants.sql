-- One campaign over many tenants (issue 38: "reprice every EUR SKU of
-- every merchant"): a campaign of a declared change created with
-- --tenant-from takes each target's tenant from its row; each job is of
-- one tenant, as every job is, and the campaign's own tenant is NULL
-- (its jobs say whose they are).
alter table {{ .schema }}.campaigns alter column tenant drop not null;
