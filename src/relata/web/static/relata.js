// Relata's own script. Every page works without it; it only adds conveniences.
// Each feature is set up by a function below when its page's elements are present.
"use strict";

(function () {
  // Keyboard: "g" then a letter goes to a section (the nav links carry data-key).
  function navigationShortcuts() {
    let armed = false;
    document.addEventListener("keydown", function (event) {
      const target = event.target;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (armed) {
        armed = false;
        const link = document.querySelector('header.top nav a[data-key="' + event.key + '"]');
        if (link) { event.preventDefault(); window.location.assign(link.href); }
        return;
      }
      if (event.key === "g") { armed = true; window.setTimeout(function () { armed = false; }, 1500); }
    });
  }

  // A form whose submit button has data-confirm asks first (the server still asks when
  // there is no script: delete has its own confirmation page).
  function confirmations() {
    document.addEventListener("submit", function (event) {
      const form = event.target;
      const message = form.getAttribute("data-confirm");
      if (message && !window.confirm(message)) event.preventDefault();
    });
  }

  window.Relata = window.Relata || {};
  // GET one of the API's JSON documents as the signed-in user (the session cookie), in the
  // page's workspace; rejects on a status other than 2xx. For the live-status scripts.
  window.Relata.getJSON = function (url, workspace) {
    return fetch(url, {
      credentials: "same-origin",
      headers: { "Accept": "application/json", "X-Relata-Workspace": workspace },
    }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    });
  };
  window.Relata.ready = function (fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  };
  window.Relata.ready(function () {
    navigationShortcuts();
    confirmations();
  });
})();
