// The example server: its behaviour comes from the domain com.example.liveserver, and changes the moment
// anyone writes it.
//
//   swift run LiveServer [--host 127.0.0.1] [--port 8080] [--token SECRET] [--directory DIR]
//
// Then, from another shell:
//   defaults write com.example.liveserver Greeting "Hi from the shell"
//   curl localhost:8080/hello
import App
import CoreMetrics
import Foundation
import Hummingbird
import LiveDefaults
import Logging
import Prometheus

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: LiveServer [--host H] [--port P] [--token T] [--directory DIR]\n".utf8))
    exit(2)
}

var options = ServerOptions()
var directory: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    guard let value = arguments.popFirst() else { usage() }
    switch argument {
    case "--host": options.host = value
    case "--port":
        guard let port = Int(value) else { usage() }
        options.port = port
    case "--token": options.token = value
    case "--directory": directory = value
    default: usage()
    }
}

// Metrics first: the library reports its reloads, changes and writes through swift-metrics, served at /metrics.
let metrics = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))

var configuration = Defaults.Configuration(applicationDomain: serverDomain, arguments: [])
if let directory { configuration.locations = .rooted(at: directory) }
// Settings a deployment pins in the environment (LIVESERVER_RATE_LIMIT=200) or in secret files
// (LIVESERVER_API_KEY_FILE=/run/secrets/api_key) win over the settings file; the page names each value's source.
configuration.environmentPrefix = serverEnvironmentPrefix
let defaults = try Defaults(configuration: configuration)
let logger = Logger(label: "LiveServer")
// The `defaults` command to suggest: the demo script passes the built binary's path.
let command =
    ProcessInfo.processInfo.environment["LIVESERVER_DEFAULTS_COMMAND"]
    ?? "swift run --package-path <LiveDefaults> defaults"
// With --directory the settings and the published schema live there: the command must look there too.
let schemas = configuration.locations.schemaDirectories.first ?? "?"
let tool =
    (directory.map { "XDG_CONFIG_HOME=\($0) LIVEDEFAULTS_SCHEMA_PATH=\(schemas) " } ?? "") + command
let file = configuration.locations.path(forDomain: serverDomain, layer: .currentUser)
let host = options.host == "::1" ? "[::1]" : options.host
let app = buildApplication(defaults: defaults, options: options, logger: logger, metrics: metrics) {
    [host, tool, file] port in
    let address = "http://\(host):\(port)"
    print(
        """
        LiveServer on \(address)   (settings page: \(address)/)
        Settings live in \(file); their schema is published in \(schemas)/\(serverDomain).plist
        Try, from another shell:
          \(tool) write \(serverDomain) Greeting "Hi from the shell"
          \(tool) describe \(serverDomain)
          curl \(address)/hello
          curl \(address)/metrics
        """)
    fflush(nil)
}
try await app.runService()
