// Drag and drop onto the import form, the chosen file list, and the upload progress bar.
(function () {
  const zone = document.getElementById("dropzone");
  const input = document.getElementById("files");
  const list = document.getElementById("file-list");
  const bar = document.getElementById("upload-progress");
  if (!zone || !input) return;

  function showFiles() {
    list.replaceChildren();
    for (const file of input.files) {
      const item = document.createElement("li");
      item.textContent = `${file.name} (${Math.ceil(file.size / 1024)} KB)`;
      list.appendChild(item);
    }
  }
  input.addEventListener("change", showFiles);
  ["dragenter", "dragover"].forEach((name) =>
    zone.addEventListener(name, (event) => { event.preventDefault(); zone.classList.add("over"); }));
  ["dragleave", "drop"].forEach((name) =>
    zone.addEventListener(name, (event) => { event.preventDefault(); zone.classList.remove("over"); }));
  zone.addEventListener("drop", (event) => {
    input.files = event.dataTransfer.files;
    showFiles();
  });
  // Too large for the server (IMPORT_MAX_UPLOAD_MB): say so now instead of sending it all to be refused.
  const form = document.getElementById("import-form");
  const result = document.getElementById("import-result");
  const maxMb = Number(form && form.dataset.maxUploadMb);
  function showError(text) {
    const box = document.createElement("div");
    box.className = "card error";
    box.id = "import-error";
    box.setAttribute("role", "alert");
    box.textContent = text;
    result.replaceChildren(box);
    result.scrollIntoView({ block: "nearest" });
  }
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    if (event.detail.elt !== form || !maxMb) return;
    let total = 0;
    for (const file of input.files) total += file.size;
    if (total > maxMb * 1024 * 1024) {
      event.preventDefault();
      showError(`These files are ${(total / 1048576).toFixed(1)} MB; at most ${maxMb} MB can be sent at once. ` +
        "Send them in several imports into the same batch.");
    }
  });
  // The server's 400 and 413 answers carry the message: show them where the result would be.
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    const source = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (source === form && (status === 400 || status === 413)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  // The answer lands under the form: bring it into view, and focus an error so it is read out.
  document.body.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target !== result) return;
    result.scrollIntoView({ block: "nearest" });
    const alert = result.querySelector('[role="alert"]');
    if (alert) { alert.tabIndex = -1; alert.focus({ preventScroll: true }); }
  });
  document.body.addEventListener("htmx:xhr:progress", (event) => {
    if (bar && event.detail.lengthComputable) bar.value = (event.detail.loaded / event.detail.total) * 100;
  });
})();
