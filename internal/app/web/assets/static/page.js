// The status page updates itself: every data-refresh-ms it asks
// api/status for the same page of jobs and updates the rows in place (no
// reload). Every value goes in with textContent, so nothing is parsed as
// HTML.
(() => {
  "use strict";
  const body = document.body;
  const every = Number(body.dataset.refreshMs) || 1000;
  const after = body.dataset.after || "";
  const live = document.getElementById("live");

  const text = (el, value) => {
    const s = value == null ? "" : String(value);
    if (el.textContent !== s) el.textContent = s;
  };
  const cell = (tr, name) => tr.querySelector("." + name);

  function fillJob(tr, j) {
    tr.dataset.job = j.job_id;
    tr.className = "state-" + j.state;
    const link = cell(tr, "job").querySelector("a");
    link.setAttribute("href", "jobs/" + encodeURIComponent(j.job_id));
    text(link, j.job_id);
    text(cell(tr, "kind"), j.kind_text);
    text(cell(tr, "tenant"), j.tenant);
    const bar = tr.querySelector("progress");
    bar.max = j.bar;
    bar.value = j.next_index;
    text(cell(tr, "count"), j.progress_text);
    text(cell(tr, "badge"), j.state);
    text(cell(tr, "detail"), j.detail);
    text(cell(tr, "drift"), j.drift_text);
    text(cell(tr, "rate"), j.rate_text);
    const eta = cell(tr, "eta");
    eta.className = "eta eta-" + j.eta.kind;
    text(eta, j.eta_text);
  }

  function fillWorker(tr, w) {
    tr.dataset.worker = w.worker_id;
    tr.className = "worker-" + w.state;
    text(cell(tr, "id"), w.worker_id);
    text(cell(tr, "host"), w.host);
    text(cell(tr, "pid"), w.pid);
    text(cell(tr, "up"), w.up);
    text(cell(tr, "chunks"), w.chunks);
    text(cell(tr, "state"), w.state_text);
    text(cell(tr, "seen"), w.seen);
  }

  function fillCampaign(tr, c) {
    tr.dataset.campaign = c.name;
    tr.className = "campaign-" + c.state_text;
    text(cell(tr, "name"), c.name);
    text(cell(tr, "badge"), c.state_text);
    const bar = tr.querySelector("progress");
    bar.max = c.bar;
    bar.value = c.committed;
    text(cell(tr, "count"), c.progress_text);
    text(cell(tr, "rate"), c.rate_text);
    text(cell(tr, "peak"), c.peak_text);
    const line = cell(tr, "line");
    if (line.getAttribute("points") !== c.points) line.setAttribute("points", c.points);
    text(cell(tr, "eta"), c.eta_text);
  }

  function fillPaused(tr, j) {
    tr.dataset.paused = j.job_id;
    const link = cell(tr, "job").querySelector("a");
    link.setAttribute("href", "jobs/" + encodeURIComponent(j.job_id));
    text(link, j.job_id);
    text(cell(tr, "campaign"), j.campaign_text);
    text(cell(tr, "since"), j.since);
    text(cell(tr, "by"), j.paused_by);
    text(cell(tr, "why"), j.pause_reason);
  }

  // sync makes tbody's rows those of list, in its order: a row is kept
  // (and updated) by its key, made from the template when new, and
  // removed when gone.
  function sync(tbody, list, key, id, template, fill) {
    const rows = new Map();
    for (const tr of Array.from(tbody.rows)) rows.set(tr.dataset[key], tr);
    list.forEach((item, i) => {
      let tr = rows.get(id(item));
      if (tr) rows.delete(id(item));
      else tr = template.content.firstElementChild.cloneNode(true);
      fill(tr, item);
      if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
    });
    for (const tr of rows.values()) tr.remove();
  }

  function render(v) {
    text(document.getElementById("summary"), v.summary);
    text(document.getElementById("updated"), v.updated);
    sync(document.querySelector("#jobs tbody"), v.jobs, "job", (j) => j.job_id,
      document.getElementById("job-row"), fillJob);
    sync(document.querySelector("#workers tbody"), v.workers, "worker", (w) => w.worker_id,
      document.getElementById("worker-row"), fillWorker);
    sync(document.querySelector("#campaigns tbody"), v.campaigns, "campaign", (c) => c.name,
      document.getElementById("campaign-row"), fillCampaign);
    sync(document.querySelector("#attention tbody"), v.attention, "paused", (j) => j.job_id,
      document.getElementById("paused-row"), fillPaused);
    document.getElementById("no-campaigns").hidden = v.campaigns.length > 0;
    document.getElementById("no-attention").hidden = v.attention.length > 0;
    for (const [id, n] of [["campaigns-hidden", v.campaigns_hidden], ["attention-hidden", v.attention_hidden]]) {
      const p = document.getElementById(id);
      p.hidden = !n;
      text(p.querySelector(".n"), n);
    }
    document.getElementById("no-jobs").hidden = v.jobs.length > 0;
    document.getElementById("no-workers").hidden = v.workers.length > 0;
    const next = document.getElementById("next");
    next.hidden = !v.next;
    next.setAttribute("href", "?after=" + encodeURIComponent(v.next));
  }

  async function poll() {
    try {
      const r = await fetch("api/status?after=" + encodeURIComponent(after), { cache: "no-store" });
      if (!r.ok) throw new Error(r.status + " " + (await r.text()).trim());
      render(await r.json());
      live.className = "ok";
      text(live, "live");
    } catch (e) {
      live.className = "err";
      text(live, "not updating (" + e.message + "); trying again");
    }
    setTimeout(poll, every);
  }
  setTimeout(poll, every);
})();
