"""What real gcloud prints when a read fails, one text per kind of answer.

Each is taken from gcloud's own sources (the Cloud SDK as published in
google-cloud-sdk-unofficial/google-cloud-sdk, lib/googlecloudsdk/...) or from a user's
report quoting it; each names where. The project in them is `PROJECT`.
"""

from __future__ import annotations

PROJECT = "k8s-scale"

# command_lib/crash_handling.py HandleGcloudCrash: "gcloud crashed ({0}): {1}" and the two
# pieces of advice after it; the requests/urllib3 text of a cut network as gcloud users
# quote it (ansible-collections/google.cloud#625: compute.googleapis.com, Errno 101).
NETWORK_CUT = """\
ERROR: gcloud crashed (ConnectionError): HTTPSConnectionPool(host='compute.googleapis.com', \
port=443): Max retries exceeded with url: /compute/v1/projects/k8s-scale/regions/us-central1\
?alt=json (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at \
0x7f3c2c1d0a90>: Failed to establish a new connection: [Errno 101] Network is unreachable'))

If you would like to report this issue, please run the following command:
  gcloud feedback

To check gcloud for common problems, please run the following command:
  gcloud info --run-diagnostics
"""
# core/exceptions.py NetworkIssueError (message, then "This may be due to network
# connectivity issues..."); calliope/exceptions.py maps socket.timeout to it.
TIMED_OUT = """\
ERROR: (gcloud.compute.regions.describe) timed out
This may be due to network connectivity issues. Please check your network settings, and \
the status of the service you are trying to reach.
"""
# core/credentials/exceptions.py TokenRefreshError ("There was a problem refreshing your
# current auth tokens: {0}", then "Please run: $ gcloud auth login"): here the refresh
# itself found no network (a DNS failure), so the login advice does not apply.
REFRESH_WITHOUT_NETWORK = """\
ERROR: (gcloud.compute.regions.describe) There was a problem refreshing your current auth \
tokens: HTTPSConnectionPool(host='oauth2.googleapis.com', port=443): Max retries exceeded \
with url: /token (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object \
at 0x7f0e1b2c3d40>: Failed to establish a new connection: [Errno -3] Temporary failure in \
name resolution'))
Please run:

  $ gcloud auth login

to obtain new credentials.
"""
REFRESH_REVOKED = """\
ERROR: (gcloud.compute.regions.describe) There was a problem refreshing your current auth \
tokens: ('invalid_grant: Token has been expired or revoked.', {'error': 'invalid_grant', \
'error_description': 'Token has been expired or revoked.'})
Please run:

  $ gcloud auth login

to obtain new credentials.
"""
# api_lib/compute/single_request_helper.py + utils: the server's message under "Could not
# fetch resource:"; the permission text as gcloud printed it in
# terraform-google-modules/terraform-google-kubernetes-engine#459 (compute.regions.list).
PERMISSION_DENIED = """\
ERROR: (gcloud.compute.regions.describe) Could not fetch resource:
 - Required 'compute.regions.get' permission for 'projects/k8s-scale/regions/us-central1'
"""
# api_lib/util/apis.py API_ENABLEMENT_REGEX: "...has not been used in project \\S+ before or
# it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/
# ([^/]+)/overview\\?project=(\\S+) then retry. ..."
COMPUTE_DISABLED = """\
ERROR: (gcloud.compute.regions.describe) Could not fetch resource:
 - Compute Engine API has not been used in project 123456789012 before or it is disabled. \
Enable it by visiting https://console.developers.google.com/apis/api/compute.googleapis.com/\
overview?project=123456789012 then retry. If you enabled this API recently, wait a few \
minutes for the action to propagate to our systems and retry.
"""
# The same server text through a gRPC-style API: status PERMISSION_DENIED, yet the API is
# off, not a permission (googleapis/python-resource-manager#129 quotes the pair).
REGISTRY_DISABLED = """\
ERROR: (gcloud.artifacts.repositories.describe) PERMISSION_DENIED: Artifact Registry API \
has not been used in project 123456789012 before or it is disabled. Enable it by visiting \
https://console.developers.google.com/apis/api/artifactregistry.googleapis.com/overview?\
project=123456789012 then retry. If you enabled this API recently, wait a few minutes for \
the action to propagate to our systems and retry.
"""
# calliope/exceptions.py: apitools BadStatusCodeError ("TooManyRequests") becomes a
# NetworkIssueError, so a 429 ends with the network sentence too; the quota text as
# compute gives it (scylladb/scylla-cluster-tests#7940).
READ_QUOTA = """\
ERROR: (gcloud.compute.regions.describe) HttpError accessing <https://compute.googleapis.com/\
compute/v1/projects/k8s-scale/regions/us-central1?alt=json>: response: <{'status': '429'}>, \
content <Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute \
per region' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.>
This may be due to network connectivity issues. Please check your network settings, and \
the status of the service you are trying to reach.
"""
# The same path for a 503 from the service: an outage, not the project's answer.
OUTAGE_503 = """\
ERROR: (gcloud.compute.regions.describe) HttpError accessing <https://compute.googleapis.com/\
compute/v1/projects/k8s-scale/regions/us-central1?alt=json>: response: <{'status': '503'}>, \
content <Service Unavailable>
This may be due to network connectivity issues. Please check your network settings, and \
the status of the service you are trying to reach.
"""
# kelseyhightower/kubernetes-the-hard-way#321: gcloud compute on a project that is not there.
NO_SUCH_PROJECT = """\
ERROR: (gcloud.compute.networks.describe) Could not fetch resource:
 - Failed to find project k8s-scale
"""
NEW_TO_US = "ERROR: (gcloud.compute.regions.describe) something no release printed before\n"
