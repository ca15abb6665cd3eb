// The Ask page streams its answer (docs/decisions/0042-streaming-answers.md): the form is
// posted as it is (its CSRF token included) with `Accept: text/event-stream`, and the server
// answers with Server-Sent Events. `sources` and `final` carry HTML the server rendered with
// the page's own templates (escaped as the page is); `delta` carries more of the answer as
// plain text, shown with textContent, unchecked and without citation markers, which come with
// `final`, resolved. Anything unexpected (another content type, a network failure) falls back
// to posting the form, so the page works as it does without this script.
"use strict";

(function () {
  const form = document.querySelector("form.ask-form");
  const results = document.getElementById("ask-results");
  if (!form || !results || !window.fetch || !window.TextDecoder || !window.ReadableStream) return;
  const MAX_BUFFER = 4 * 1024 * 1024; // one event is never this large

  let busy = false;

  function fallback() {
    busy = false;
    form.submit(); // a plain post: the page renders the whole answer
  }

  function draftSection() {
    const section = document.createElement("section");
    section.className = "answer";
    section.setAttribute("aria-labelledby", "answer-heading");
    section.setAttribute("aria-busy", "true");
    const h2 = document.createElement("h2");
    h2.id = "answer-heading";
    h2.textContent = "Answer";
    const card = document.createElement("div");
    card.className = "card";
    const text = document.createElement("p");
    text.className = "answer-text answer-draft";
    const note = document.createElement("p");
    note.className = "hint";
    note.textContent = results.dataset.draftNote || "";
    card.append(text, note);
    section.append(h2, card);
    return { section: section, text: text };
  }

  function showError(message) {
    const p = document.createElement("p");
    p.className = "error";
    p.setAttribute("role", "alert");
    p.textContent = (results.dataset.failed || "") + " " + message;
    results.replaceChildren(p);
  }

  // One event block ("event: x\ndata: {...}") as [name, data]; null when it has no data.
  function parseBlock(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return null;
    return [name, JSON.parse(data.join("\n"))];
  }

  async function ask() {
    busy = true;
    const draft = draftSection();
    let sources = null;
    let finished = false;
    let response;
    try {
      response = await fetch(form.action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
      });
    } catch (e) {
      fallback();
      return;
    }
    const type = (response.headers.get("content-type") || "").split(";")[0].trim();
    if (!response.ok || type !== "text/event-stream" || !response.body) {
      fallback(); // a refused question renders its page with the reason
      return;
    }
    results.replaceChildren(draft.section);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        if (buffer.length > MAX_BUFFER) throw new Error("an event is too large");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const event = parseBlock(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (!event) continue;
          const [name, data] = event;
          if (name === "sources") {
            sources = document.createElement("div");
            sources.innerHTML = data.html; // rendered and escaped by the server's templates
            results.append(sources);
          } else if (name === "delta") {
            draft.text.append(document.createTextNode(data.text));
          } else if (name === "final") {
            results.innerHTML = data.html; // the page's own rendering of the checked answer
            finished = true;
          } else if (name === "error") {
            showError(data.error && data.error.message ? data.error.message : "unknown error");
            finished = true;
          }
        }
      }
    } catch (e) {
      showError(String(e && e.message ? e.message : e));
      finished = true;
    } finally {
      busy = false;
    }
    if (!finished) showError("the connection ended before the answer was finished");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!busy) ask();
  });
})();
