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
  document.body.addEventListener("htmx:xhr:progress", (event) => {
    if (bar && event.detail.lengthComputable) bar.value = (event.detail.loaded / event.detail.total) * 100;
  });
})();
