// The review queue's keyboard shortcuts (the legend on the page lists them): j and k move
// between relationships, c confirms, x rejects and e goes to the type select of the current
// one. They press the page's own buttons, so a decision is the same form post as a click;
// without this script the page works the same by mouse and Tab.
"use strict";

(function () {
  const TYPING = /^(INPUT|TEXTAREA|SELECT)$/;

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("article[data-review]"));
  }

  // The relationship being worked on: the one holding the focus, else the marked one.
  function current(list) {
    const active = document.activeElement;
    for (let i = 0; i < list.length; i += 1) {
      if (list[i] === active || list[i].contains(active)) return i;
    }
    for (let i = 0; i < list.length; i += 1) {
      if (list[i].classList.contains("current")) return i;
    }
    return -1;
  }

  function focusCard(list, index) {
    if (index < 0 || index >= list.length) return;
    list.forEach(function (card) { card.classList.remove("current"); });
    const card = list[index];
    card.classList.add("current");
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "start", behavior: "smooth" });
  }

  function press(card, action) {
    const button = card.querySelector('[data-review-form] button[data-action="' + action + '"]');
    if (!button) return false;  // a viewer's page has no forms
    const form = button.form;
    if (typeof form.requestSubmit === "function") form.requestSubmit(button);
    else button.click();
    return true;
  }

  function shortcuts() {
    let afterG = false;  // "g" then a letter is relata.js's navigation, not a decision
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target;
      if (target && (target.isContentEditable || TYPING.test(target.tagName))) return;
      if (afterG) { afterG = false; return; }
      if (event.defaultPrevented) return;
      if (event.key === "g") {
        afterG = true;
        window.setTimeout(function () { afterG = false; }, 1500);
        return;
      }
      const list = cards();
      if (!list.length) return;
      let at = current(list);
      if (event.key === "j" || event.key === "k") {
        event.preventDefault();
        const step = event.key === "j" ? 1 : -1;
        focusCard(list, at < 0 ? 0 : Math.min(list.length - 1, Math.max(0, at + step)));
        return;
      }
      if (at < 0) at = 0;
      const card = list[at];
      if (event.key === "c" || event.key === "x") {
        if (press(card, event.key === "c" ? "confirm" : "reject")) event.preventDefault();
      } else if (event.key === "e") {
        const select = card.querySelector("[data-type-select]");
        if (select) {
          event.preventDefault();
          list.forEach(function (c) { c.classList.remove("current"); });
          card.classList.add("current");
          select.focus();
        }
      }
    });
  }

  function start() {
    const list = cards();
    if (!list.length) return;
    list[0].classList.add("current");
    // After a decision the queue comes back with ?done=: carry on from the first one.
    if (new URLSearchParams(window.location.search).has("done")) list[0].focus({ preventScroll: true });
    shortcuts();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
