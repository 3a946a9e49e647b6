"""What a job asks for and starts: its request, its workers, their launch, its batch commands and status."""
