// The build tool behind the EmbedDashboard plugin: the dashboard's web files as the Swift source
// of `DashboardPage.html`, so runneld serves the page from its binary.
//
//   DashboardEmbedder OUTPUT.swift INDEX.html FILE...
//   DashboardEmbedder --module OUTPUT.swift MODULE.js
//
// Writes INDEX.html with each FILE put in place of the line that references it, a line that is
// (spaces aside) `<link rel="stylesheet" href="NAME">`, `<script src="NAME"></script>` or
// `<script type="module" src="NAME"></script>` with NAME the FILE's name: the browser gets one self-contained document, while index.html in the
// repository stays an ordinary page that links its files. A reference to a file not given, a file
// given but not referenced, invalid UTF-8, or a `</style` or `</script` inside an inlined file
// (which would end it early) fails the build. With `--module`, writes MODULE.js's text as it is,
// as `ClientModule.source` (the JavaScript client runneld serves at `GET /runnel.js`).
// Top-level code is MainActor-isolated: keep it to this one call.
DashboardEmbedder.run(CommandLine.arguments)
