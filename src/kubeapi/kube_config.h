// KubeConfig: where the Kubernetes API server is and who accel is to it, from the pod's service
// account (in-cluster) or from a kubeconfig file (`accel serve --kubeconfig FILE`).
//
// Supported: server https:// or http://; the server verified against certificate-authority(-data)
// or the system CAs, or not at all (insecure-skip-tls-verify); a bearer token (inline or tokenFile,
// re-read when it rotates) and/or a client certificate and key (files or -data). Not supported,
// and refused with an error saying so: `exec` and `auth-provider` credential plugins, basic auth
// (username/password). Ignored: proxy-url, tls-server-name, extensions, preferences.
//
// Plain structs and stateless functions; safe from any thread.
#pragma once

#include <string>

namespace accel::kubeapi {

/// Everything KubeClient needs to reach and authenticate to one API server.
struct KubeConfig {
  /// Base URL without a trailing slash: "https://10.96.0.1:443", "https://[fd00::1]:443",
  /// "http://127.0.0.1:8080".
  std::string server;
  /// Where this came from, for errors: "in-cluster config" or the kubeconfig's path.
  std::string source;
  /// Who requests are made as, for 401/403 messages: "service account accel-system/accel-dra",
  /// "user 'admin' of kubeconfig /root/.kube/config".
  std::string identity;
  /// The default namespace (the context's or the pod's); "default" when none is given.
  std::string default_namespace = "default";

  std::string ca_file;    ///< PEM CA bundle verifying the server; "" = ca_pem or the system's CAs
  std::string ca_pem;     ///< PEM CA certificates in memory (certificate-authority-data)
  bool insecure = false;  ///< https without verifying the server (insecure-skip-tls-verify)

  std::string token;       ///< bearer token given inline; "" = none (or token_file)
  /// Bearer token read from this file (service account tokens, kubeconfig tokenFile); re-read at
  /// most every KubeClientOptions::token_reread and after a 401, because bound tokens rotate.
  /// Wins over `token` when both are set.
  std::string token_file;
  /// Client certificate chain and unencrypted key, as files or PEM text (the *_pem win).
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;
};

/// The pod's own config: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (an IPv6 host goes
/// in brackets) and the service account's token, ca.crt and namespace under
/// `root` + "/var/run/secrets/kubernetes.io/serviceaccount" (`root` = "" in production; a temp
/// dir in tests). The identity is the token's subject (system:serviceaccount:NS:NAME) when the
/// token is a readable JWT. Throws InputError naming the variable or file when it is missing
/// (not running in a pod: the hint says to pass --kubeconfig).
KubeConfig InClusterConfig(const std::string& root = "");

/// Parses kubeconfig YAML. `where` names the file in errors; relative file paths in it resolve
/// against `base_dir` ("" = as given). `context` selects a context; "" = current-context.
/// Throws InputError(where, key path, problem) for anything missing or malformed, e.g.
/// ("~/.kube/config", "users[admin].user.exec", "credential plugins are not supported", ...).
KubeConfig ParseKubeconfig(const std::string& text, const std::string& where, const std::string& base_dir = "",
                           const std::string& context = "");

/// Reads and parses the kubeconfig at `path` (relative paths inside resolve against its
/// directory). Throws InputError naming the file when it cannot be read or is malformed.
KubeConfig LoadKubeconfig(const std::string& path, const std::string& context = "");

}  // namespace accel::kubeapi
