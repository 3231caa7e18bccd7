/// The JavaScript client served at `GET /runnel.js` (docs/clients.md, "JavaScript"): one ES
/// module with no dependencies, for browsers and Node. Its file is clients/js/runnel.js; the
/// EmbedDashboard build plugin declares `source`, the file's text, in a generated extension, so
/// runneld reads no file to serve it. The dashboard page imports it.
/// Thread rules: `source` is a constant, read from any thread.
enum ClientModule {}
