// Uploading from the library with progress per file. Without this script the form posts every
// file to /w/{slug}/library/upload and the answer is a page of results; with it, each file
// chosen or dropped is sent on its own to POST /api/v1/items (the session cookie
// authenticates; X-CSRF-Token and X-Relata-Workspace come from the form's data- attributes),
// one after the other, with a <progress> and then its outcome: a link to the new item (its
// status followed by status.js), "duplicate of" the existing item, or why it was refused.
// Everything shown is set as text, never as markup.
"use strict";

(function () {
  const MAX_RETRIES = 3; // when the server is busy (503), per file
  const MAX_RETRY_WAIT_S = 30;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function itemLink(slug, id, text) {
    const link = element("a", "", text);
    link.href = "/w/" + encodeURIComponent(slug) + "/items/" + encodeURIComponent(id);
    return link;
  }

  function parse(xhr) {
    try {
      return JSON.parse(xhr.responseText);
    } catch (e) {
      return null;
    }
  }

  function row(list, file) {
    const li = element("li");
    li.appendChild(element("span", "name", file.name || "(no file name)"));
    const progress = element("progress");
    progress.max = 100;
    progress.value = 0;
    progress.setAttribute("aria-label", "Upload of " + (file.name || "a file"));
    li.appendChild(progress);
    const outcome = element("span", "outcome", "waiting");
    li.appendChild(outcome);
    list.appendChild(li);
    return { progress: progress, outcome: outcome };
  }

  function refused(view, message) {
    view.progress.remove();
    view.outcome.className = "outcome rejected";
    view.outcome.textContent = "Rejected: " + message;
  }

  function uploaded(ctx, view, item) {
    view.progress.value = 100;
    view.outcome.className = "outcome uploaded";
    view.outcome.textContent = "";
    const link = itemLink(ctx.slug, item.id, item.title || "the new item");
    link.setAttribute("data-title-of", item.id); // status.js shows the title parsing finds
    view.outcome.appendChild(link);
    view.outcome.appendChild(document.createTextNode(" "));
    const status = element("span", "status status-" + String(item.status).replace(/[^a-z]/g, ""), item.status);
    status.setAttribute("data-live-status", "");
    status.setAttribute("data-item-id", item.id);
    status.setAttribute("data-status", item.status);
    view.outcome.appendChild(status);
    if (window.Relata && window.Relata.watchStatus) window.Relata.watchStatus(status);
  }

  function duplicate(ctx, view, existingId, message) {
    view.progress.remove();
    view.outcome.className = "outcome duplicate";
    if (!existingId) {
      view.outcome.textContent = "Duplicate: " + message;
      return;
    }
    view.outcome.textContent = "Duplicate of ";
    const link = itemLink(ctx.slug, existingId, "an existing item");
    view.outcome.appendChild(link);
    // The conflict names the existing item's id; its title makes the link readable.
    fetch("/api/v1/items/" + encodeURIComponent(existingId), {
      credentials: "same-origin",
      headers: { "Accept": "application/json", "X-Relata-Workspace": ctx.slug },
    })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (item) { if (item && item.title) link.textContent = item.title; })
      .catch(function () { /* the link still works */ });
  }

  function send(ctx, file, view, attempt) {
    if (ctx.maxBytes && file.size > ctx.maxBytes) {
      refused(view, "the file is over the limit of " + ctx.maxBytes + " bytes");
      return Promise.resolve();
    }
    if (file.size === 0) {
      refused(view, "the file is empty");
      return Promise.resolve();
    }
    view.outcome.textContent = attempt ? "busy, trying again" : "uploading";
    return new Promise(function (resolve) {
      const body = new FormData();
      body.append("file", file, file.name);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/items");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.setRequestHeader("X-CSRF-Token", ctx.csrf);
      xhr.setRequestHeader("X-Relata-Workspace", ctx.slug);
      xhr.upload.addEventListener("progress", function (event) {
        if (event.lengthComputable) view.progress.value = Math.round((event.loaded / event.total) * 100);
      });
      xhr.addEventListener("load", function () {
        const answer = parse(xhr);
        const error = (answer && answer.error) || {};
        if (xhr.status === 201 && answer) {
          uploaded(ctx, view, answer);
        } else if (xhr.status === 409 && error.code === "duplicate_item") {
          duplicate(ctx, view, error.existing_id, error.message || "already in the library");
        } else if (xhr.status === 503 && attempt < MAX_RETRIES) {
          const wait = Math.min(Number(xhr.getResponseHeader("Retry-After")) || 2, MAX_RETRY_WAIT_S);
          window.setTimeout(function () { send(ctx, file, view, attempt + 1).then(resolve); }, wait * 1000);
          return;
        } else {
          refused(view, error.message || "the server answered " + xhr.status);
        }
        resolve();
      });
      xhr.addEventListener("error", function () {
        refused(view, "the connection failed; try again");
        resolve();
      });
      xhr.send(body);
    });
  }

  function setup() {
    const form = document.querySelector("form[data-upload]");
    if (!form || !window.FormData || !window.XMLHttpRequest || !window.fetch) return;
    const input = form.querySelector('input[type="file"]');
    const zone = form.querySelector("[data-dropzone]");
    const list = document.getElementById(form.getAttribute("data-list"));
    if (!input || !list) return;
    const ctx = {
      csrf: form.getAttribute("data-csrf"),
      slug: form.getAttribute("data-slug"),
      maxBytes: Number(form.getAttribute("data-max-bytes")) || 0,
    };
    let queue = Promise.resolve(); // one file at a time: the server admits a few at once

    function enqueue(files) {
      Array.prototype.forEach.call(files, function (file) {
        const view = row(list, file);
        queue = queue.then(function () { return send(ctx, file, view, 0); });
      });
    }

    form.addEventListener("submit", function (event) {
      if (!input.files || input.files.length === 0) return; // the browser says it is required
      event.preventDefault();
      enqueue(input.files);
      form.reset();
    });

    if (zone) {
      ["dragenter", "dragover"].forEach(function (name) {
        zone.addEventListener(name, function (event) {
          event.preventDefault();
          zone.classList.add("over");
        });
      });
      ["dragleave", "dragend"].forEach(function (name) {
        zone.addEventListener(name, function () { zone.classList.remove("over"); });
      });
      zone.addEventListener("drop", function (event) {
        event.preventDefault();
        zone.classList.remove("over");
        if (event.dataTransfer && event.dataTransfer.files.length) enqueue(event.dataTransfer.files);
      });
    }
  }

  if (window.Relata && window.Relata.ready) window.Relata.ready(setup);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
