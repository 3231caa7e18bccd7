/// The dashboard served at `GET /` (docs/protocol.md, "The HTTP front door"): one document,
/// plain HTML, CSS and JavaScript with nothing fetched from elsewhere but the JavaScript client
/// runneld serves too (`ClientModule`, `GET /runnel.js`), which its module script imports. Its
/// files are web/dashboard/; the EmbedDashboard build plugin puts the stylesheet and script in
/// line and declares `html` in a generated extension. The page talks to runneld only over
/// `GET /ws`, through the client (`list`, `sub` with `ops`, `from` and `conflate`, `unsub`, `pub`, `auth`);
/// Tests/blackbox/test_dashboard.py drives it in a real browser.
/// Thread rules: `html` is a constant, read from any thread.
enum DashboardPage {}
