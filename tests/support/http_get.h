// A plain HTTP/1.0 GET over a POSIX socket, for the tests that scrape mltuned's metrics: what
// Prometheus does, without any client library that might hide a protocol problem.
#pragma once

#include <string>

namespace mltune::testing {

// The whole response (status line, headers, body) of GET `path` on 127.0.0.1:`port`, or ""
// when the connection fails.
std::string HttpGet(int port, const std::string& path);

// The body of a response HttpGet returned ("" when it has no header end).
std::string Body(const std::string& response);

}  // namespace mltune::testing
