#include "daemon/metrics/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mltune::daemon {
namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;  // a scrape's request is a few hundred bytes
constexpr int kIoTimeoutSeconds = 5;            // a stalled client cannot hold the endpoint

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Response(std::string_view status, std::string_view content_type,
                     const std::string& body, bool head) {
  std::string response = "HTTP/1.1 ";
  response.append(status).append("\r\nContent-Type: ").append(content_type);
  response.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  response.append("\r\nConnection: close\r\n\r\n");
  if (!head) response.append(body);
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, std::function<std::string()> body) {
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  // "" and "0.0.0.0" listen on every IPv4 address; "[::1]" is IPv6 written as in a URL.
  std::string name = host;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  if (int rc = getaddrinfo(name.empty() ? nullptr : name.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", where, ": ", gai_strerror(rc)));
  }
  auto server = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      server->listen_fd_ = fd;
      break;
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  if (server->listen_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", where, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(server->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  server->port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (server->wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  server->body_ = std::move(body);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void MetricsHttpServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client went away, or out of descriptors for now
    const timeval timeout{kIoTimeoutSeconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    Answer(fd);
    close(fd);
  }
}

void MetricsHttpServer::Answer(int fd) {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  const size_t line_end = request.find("\r\n");
  if (line_end == std::string::npos) {
    WriteAll(fd, Response("400 Bad Request", "text/plain", "bad request\n", false));
    return;
  }
  // "GET /metrics?x=y HTTP/1.1": method, then the path without its query.
  const std::string_view line(request.data(), line_end);
  const size_t space = line.find(' ');
  const std::string_view method = line.substr(0, space);
  std::string_view target =
      space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  target = target.substr(0, target.find(' '));
  const std::string_view path = target.substr(0, target.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    WriteAll(fd, Response("405 Method Not Allowed", "text/plain", "only GET and HEAD\n", false));
    return;
  }
  if (path != "/metrics") {
    WriteAll(fd, Response("404 Not Found", "text/plain", "metrics are at /metrics\n", head));
    return;
  }
  WriteAll(fd, Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body_(), head));
}

}  // namespace mltune::daemon
