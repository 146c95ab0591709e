// ApiError: the Kubernetes API server answered a request with an error status. A SystemError (the
// input was fine, the peer refused) that also carries the HTTP status and the API's Status
// object (reason, message), so callers can tell a resourceVersion conflict from a missing or
// forbidden object without parsing text.
//
// Header only; immutable, safe from any thread.
#pragma once

#include <string>
#include <utility>

#include "common/error.h"

namespace accel::kubeapi {

class ApiError : public SystemError {
 public:
  /// http_status: e.g. 409. status_reason / status_message: the answer's Status.reason
  /// ("Conflict", "AlreadyExists", "NotFound", "Forbidden", ...) and Status.message, "" when the
  /// answer carried no Status. operation/object/reason/hint: as SystemError's.
  ApiError(int http_status, std::string status_reason, std::string status_message, std::string operation,
           std::string object, std::string reason, std::string hint = "")
      : SystemError(std::move(operation), std::move(object), std::move(reason), std::move(hint)),
        http_status_(http_status),
        status_reason_(std::move(status_reason)),
        status_message_(std::move(status_message)) {}

  int http_status() const { return http_status_; }
  const std::string& status_reason() const { return status_reason_; }
  const std::string& status_message() const { return status_message_; }

  /// 409 on an update: the object changed since it was read (resourceVersion mismatch).
  bool IsConflict() const { return http_status_ == 409 && status_reason_ != "AlreadyExists"; }
  /// 409 on a create: an object of that name exists.
  bool IsAlreadyExists() const { return http_status_ == 409 && status_reason_ == "AlreadyExists"; }
  bool IsNotFound() const { return http_status_ == 404; }
  /// 401 (credentials not accepted) or 403 (RBAC refused the verb).
  bool IsAuthError() const { return http_status_ == 401 || http_status_ == 403; }

 private:
  int http_status_;
  std::string status_reason_;
  std::string status_message_;
};

}  // namespace accel::kubeapi
