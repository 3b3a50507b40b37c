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
