// Live status of items still being processed (library rows, upload results, the item page,
// and the uploads upload.js adds): each element with data-live-status and data-item-id is
// followed by polling GET /api/v1/items/{id} (the session cookie authenticates; the
// workspace is the data-slug of an enclosing element) until the item is ready or failed.
// Bounded: at most MAX_POLLS requests per item, further apart each time, then it stops and
// says to reload. Changes are announced in the page's aria-live region (#status-announcer)
// or, for an element inside an aria-live region, by that region itself. Without this script
// every page shows the status it had when it was served.
"use strict";

(function () {
  const FIRST_DELAY_MS = 1500;
  const MAX_DELAY_MS = 15000;
  const MAX_POLLS = 40; // about eight minutes at the longest delay
  const FINAL = { ready: true, failed: true };

  function slugOf(element) {
    const holder = element.closest("[data-slug]");
    return holder ? holder.getAttribute("data-slug") : null;
  }

  function announce(element, text) {
    if (element.closest("[aria-live]")) return; // the region around it says it
    const region = document.getElementById("status-announcer");
    if (region) region.textContent = text;
  }

  function show(element, item) {
    const status = String(item.status);
    element.textContent = status;
    element.className = "status status-" + status.replace(/[^a-z]/g, "");
    element.setAttribute("data-status", status);
    let text = (item.title ? item.title + ": " : "") + status;
    if (status === "failed" && item.failed_stage) text += " at the " + item.failed_stage + " stage";
    if (item.error && status === "failed") element.title = String(item.error);
    announce(element, text);
    // The title may have changed too (parsing finds the document's own title): links to the
    // item that carry data-title-of show the new one.
    if (item.title) {
      document.querySelectorAll("[data-title-of]").forEach(function (link) {
        if (link.getAttribute("data-title-of") === String(item.id)) link.textContent = item.title;
      });
    }
  }

  function stopped(element, why) {
    const note = document.createElement("span");
    note.className = "sub live-note";
    note.textContent = " " + why;
    element.after(note);
  }

  function watch(element) {
    if (!element || element.hasAttribute("data-watching")) return;
    const id = element.getAttribute("data-item-id");
    const slug = slugOf(element);
    if (!id || !slug || FINAL[element.getAttribute("data-status")]) return;
    element.setAttribute("data-watching", "");
    let polls = 0;
    let delay = FIRST_DELAY_MS;

    function next() {
      if (polls >= MAX_POLLS) {
        stopped(element, "(still processing: reload the page later to see its status)");
        return;
      }
      window.setTimeout(poll, delay);
      delay = Math.min(Math.round(delay * 1.5), MAX_DELAY_MS);
    }

    function poll() {
      polls += 1;
      fetch("/api/v1/items/" + encodeURIComponent(id), {
        credentials: "same-origin",
        headers: { "Accept": "application/json", "X-Relata-Workspace": slug },
      })
        .then(function (response) {
          if (response.status === 404) {
            stopped(element, "(deleted)");
            return null;
          }
          if (!response.ok) throw new Error("status " + response.status);
          return response.json();
        })
        .then(function (item) {
          if (item === null) return;
          if (item.status !== element.getAttribute("data-status")) show(element, item);
          if (!FINAL[item.status]) next();
          else if (element.hasAttribute("data-reload-hint")) {
            stopped(element, element.getAttribute("data-reload-hint"));
          }
        })
        .catch(function () { next(); }); // offline or busy for a moment: try again later
    }

    next();
  }

  window.Relata = window.Relata || {};
  window.Relata.watchStatus = watch;

  function start() {
    document.querySelectorAll("[data-live-status][data-item-id]").forEach(watch);
  }
  if (window.Relata.ready) window.Relata.ready(start);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
